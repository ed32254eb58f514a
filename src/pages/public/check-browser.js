// The receipt pages' script: GET /receipts (check a pasted receipt) and
// GET /receipts/<id> (check the signed receipt the page carries, next to the
// server's own checks). Bundled with the client's dependency-free check
// (src/client/receipt-check.js, itself built from src/log) by
// `node src/scripts/public-assets.mjs` into check-script.gen.ts, which the
// Worker serves at /assets/public/check.js. Receipt text is only ever set
// with textContent; links only ever point to http(s).
import { loadCrypto } from "../../client/web-crypto.js";
import { parsePublicKeys, readReceipt, verifyReceipt } from "../../client/receipt-check.js";
import { checkReceiptPage } from "./receipt-view-check.js";

const KEYS_URL = "/.well-known/witness-keys.json";
const STAGES = ["format", "signature", "log", "issuance"];
const WHAT = { format: "Format", signature: "Signature", log: "Transparency log", issuance: "At issuance" };

const $ = (id) => document.getElementById(id);

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function httpUrl(text) {
  try {
    const url = new URL(String(text));
    return url.protocol === "https:" || url.protocol === "http:" ? url : null;
  } catch {
    return null;
  }
}

/** A receipt link or an event id: where Witness's own check of it is. */
function viewUrlOf(text) {
  const url = httpUrl(text);
  if (url) {
    const m = /\/receipts\/([^/?#]+)\/?$/.exec(url.pathname);
    return m ? `${url.origin}/receipts/${m[1]}` : null;
  }
  return /^[A-Za-z0-9_-]{8,128}$/.test(text) ? `/receipts/${encodeURIComponent(text)}` : null;
}

/** Which check verifyReceipt stopped at; it checks format, signature, log proof and issuance verdict in that order. */
function failedStage(reason) {
  if (/^no public key with id|^the proof does not match|^the key or proof is malformed/.test(reason)) return "signature";
  if (/tlog_proof|the receipt's hash is malformed/.test(reason)) return "log";
  if (/^the receipt is genuine/.test(reason)) return "issuance";
  return "format";
}

function failText(stage, reason) {
  if (stage === "format") return ["Not a Witness receipt", reason];
  if (stage === "signature") {
    if (reason.startsWith("no public key")) return ["Signature does not match any published key", reason];
    return ["Signature does not match", "The receipt's fields were changed after it was signed, or another key signed it."];
  }
  if (stage === "log") return ["Log proof does not verify", reason];
  return ["Witness found this event altered when it issued this receipt", "The receipt is genuine, and it says the event or its chain links did not check out."];
}

function passText(stage, receipt, result) {
  if (stage === "format") return ["A witness.receipt.v1 receipt"];
  if (stage === "signature") return ["Signature matches", `Signed with the published key ${result.kid}.`];
  if (stage === "log") {
    const t = result.tlog;
    return ["In the project's transparency log", `Leaf ${t.index} of a tree of ${t.tree_size}, in a checkpoint signed for ${t.origin}.`];
  }
  return ["Witness found the event and its chain links intact when it issued this receipt"];
}

function localTime(iso) {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? String(iso) : new Date(t).toLocaleString(undefined, { dateStyle: "long", timeStyle: "long" });
}

function checkItem(what, state, result, why) {
  const li = el("li", `check ${state}`);
  li.dataset.check = what;
  const icon = el("span", "icon", state === "pass" ? "\u2713" : state === "fail" ? "\u2717" : state === "pending" ? "\u2026" : "\u2013");
  icon.setAttribute("aria-hidden", "true");
  const body = el("span");
  body.append(el("span", "what", what), el("span", "result", result));
  if (why) body.append(el("span", "why", why));
  li.append(icon, body);
  return li;
}

function field(dl, name, value) {
  dl.append(el("dt", null, name));
  const dd = el("dd");
  if (value instanceof Node) dd.append(value);
  else dd.textContent = value === null || value === undefined ? "none" : String(value);
  dl.append(dd);
}

function timeField(dl, name, iso) {
  if (typeof iso !== "string") return;
  const span = el("span");
  const time = el("time", null, localTime(iso));
  time.setAttribute("datetime", iso);
  span.append(time, el("code", "iso", iso));
  field(dl, name, span);
}

function pair(value) {
  if (!value || typeof value !== "object") return "none";
  return `${value.type ?? "?"} / ${value.id ?? "(no id)"}`;
}

function show(receipt, result, keysFailed) {
  const failed = result.ok ? null : failedStage(result.reason);
  const list = $("checks");
  list.replaceChildren();
  for (const stage of STAGES) {
    const what = WHAT[stage];
    if (keysFailed) {
      list.append(checkItem(what, "skip", "Not checked", stage === "format" ? result.reason : undefined));
      continue;
    }
    const before = failed === null || STAGES.indexOf(stage) < STAGES.indexOf(failed);
    if (stage === failed) list.append(checkItem(what, "fail", ...failText(stage, result.reason)));
    else if (!before) list.append(checkItem(what, "skip", "Not checked: an earlier check failed"));
    else if (stage === "log" && !result.tlog) list.append(checkItem(what, "skip", "No log proof in this receipt", "It was issued while the project's log was being built."));
    else list.append(checkItem(what, "pass", ...passText(stage, receipt, result)));
  }
  const verdict = $("verdict");
  verdict.className = `verdict ${result.ok ? "ok" : "bad"}`;
  verdict.textContent = result.ok
    ? "Verified in this browser: the receipt is genuine and its event is in the project's log."
    : keysFailed
      ? "Not checked: the published keys could not be loaded."
      : "Not verified: this receipt does not check out.";

  const erasure = $("erasure");
  const erased = receipt && receipt.actor && typeof receipt.actor === "object" && receipt.actor.id === null;
  erasure.hidden = !erased;
  erasure.textContent = erased
    ? "The actor has no id in this receipt: the event was recorded without one, or the actor's personal data was lawfully erased before it was issued. Erasure never changes the signed hash."
    : "";

  const dl = $("fields");
  dl.replaceChildren();
  if (receipt && typeof receipt === "object") {
    const view = httpUrl(receipt.view_url);
    const issuer = view ?? httpUrl(receipt.verification_url);
    if (receipt.action !== undefined) field(dl, "Action", receipt.action);
    if (receipt.actor !== undefined) field(dl, "Actor", pair(receipt.actor));
    if (receipt.target !== undefined) field(dl, "Target", pair(receipt.target));
    timeField(dl, "Occurred", receipt.occurred_at);
    timeField(dl, "Issued", receipt.issued_at);
    if (issuer) field(dl, "Issued by", issuer.host + (issuer.origin === location.origin ? "" : ` (checked here with ${location.host}'s keys)`));
    if (receipt.event_id !== undefined) field(dl, "Event id", receipt.event_id);
    if (receipt.seq !== undefined) field(dl, "Chain position", `#${receipt.seq}`);
    if (receipt.hash !== undefined) field(dl, "Hash", receipt.hash);
    if (view) {
      const a = el("a", null, "Witness's current check of this event");
      a.href = view.href;
      field(dl, "Today", a);
    }
  }
  const section = $("result");
  section.hidden = false;
  section.focus();
}

/** The keys this Worker publishes, with WebCrypto ready; throws saying why not. */
async function loadKeys() {
  await loadCrypto();
  const res = await fetch(KEYS_URL, { cache: "no-store", credentials: "omit" });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return parsePublicKeys(await res.text());
}

async function check(text) {
  let receipt = null;
  try {
    receipt = readReceipt(text);
  } catch {
    // verifyReceipt says why below
  }
  let keys;
  try {
    keys = await loadKeys();
  } catch (error) {
    show(receipt, { ok: false, reason: `the published keys could not be loaded (${error.message})` }, true);
    return;
  }
  show(receipt, await verifyReceipt(text, keys), false);
}

// GET /receipts/<id>: the page's signed receipt, checked here. The server's checks stay as the server rendered them.

const FIELD_NAMES = { event_id: "event id", action: "action", seq: "chain position", hash: "hash", valid: "verdict" };
const SERVER_OK = "Verified by the server: this event is in its project's audit chain and has not been altered.";

function signatureItem(stage) {
  const what = "Receipt signature";
  if (stage.state === "pass") return checkItem(what, "pass", "Signature matches", `Signed with the published key ${stage.kid}.`);
  if (stage.state === "skip") return checkItem(what, "skip", `Not checked: ${stage.why}`);
  const failed = failedStage(stage.reason);
  const [result] = failed === "format" ? ["Not a signed Witness receipt"] : failText("signature", stage.reason);
  return checkItem(what, "fail", result, stage.reason);
}

function checkpointItem(stage) {
  const what = "Checkpoint signature";
  if (stage.state === "skip") return checkItem(what, "skip", `Not checked: ${stage.why}`);
  if (stage.state === "fail") {
    const unreadable = stage.reason.startsWith("tlog_proof is malformed");
    return checkItem(what, "fail", unreadable ? "The log proof cannot be read" : "The log's checkpoint is not signed with a published key", stage.reason);
  }
  const why = stage.origin ? `A tree of ${stage.treeSize} events, signed for ${stage.origin} with the key ${stage.kid}.` : undefined;
  return checkItem(what, "pass", "The log's checkpoint is signed with a published key", why);
}

function inclusionItem(stage) {
  const what = "Inclusion proof";
  if (stage.state === "skip") return checkItem(what, "skip", `Not checked: ${stage.why}`);
  if (stage.state === "fail") {
    const changed = stage.reason === "inclusion proof does not match the checkpoint root";
    const why = changed ? `The hash shown here is not the one this event was logged with (${stage.reason}).` : stage.reason;
    return checkItem(what, "fail", "The event's hash is not in the log's signed tree", why);
  }
  return checkItem(what, "pass", "The event's hash is in the project's transparency log", `Leaf ${stage.index} of a tree of ${stage.treeSize}.`);
}

function pageItem(stage) {
  const what = "This page";
  if (stage.state === "skip") return checkItem(what, "skip", `Not checked: ${stage.why}`);
  const names = (stage.fields ?? []).map((f) => FIELD_NAMES[f] ?? f).join(", ");
  if (stage.state === "fail") {
    return stage.missing
      ? checkItem(what, "fail", "This page does not show what the receipt signs", `Missing: ${names}.`)
      : checkItem(what, "fail", "This page shows other values than the signed receipt", `Different: ${names}.`);
  }
  return checkItem(what, "pass", "Shows what the receipt signs", "The event id, action, chain position, hash and verdict above are the signed ones.");
}

/** The verdict claims only what ran: the server's sentence as rendered, then the browser's, which may overrule it. */
function browserVerdict(outcome, why) {
  const verdict = $("verdict");
  const serverOk = verdict.dataset.server === "valid";
  const text = {
    checking: "Checking in your browser\u2026",
    verified: "Verified in your browser: the receipt is signed with a published key, and the event's hash is in the project's transparency log.",
    partial: "Partly verified in your browser: the receipt is signed with a published key, but it carries no transparency log proof yet.",
    failed: serverOk ? "The server says the event is intact, but that is its word alone." : "Your browser's check failed too (below).",
    unavailable: `Not checked in your browser: ${why}.`,
  }[outcome];
  $("verdict-browser").textContent = text;
  if (!serverOk) return;
  $("verdict-server").textContent = outcome === "failed" ? "Not verified: your browser's check of this receipt failed (below)." : SERVER_OK;
  verdict.className = `verdict ${outcome === "failed" ? "bad" : outcome === "unavailable" ? "warn" : "ok"}`;
}

function showPageResult(section, result) {
  $("browser-checks").replaceChildren(signatureItem(result.signature), checkpointItem(result.checkpoint), inclusionItem(result.inclusion), pageItem(result.page));
  section.dataset.outcome = result.outcome;
  browserVerdict(result.outcome);
}

function unavailable(section, why) {
  const list = $("browser-checks");
  for (const li of [...list.children]) li.replaceWith(checkItem(li.dataset.check, "skip", "Not checked", why));
  section.dataset.outcome = "unavailable";
  browserVerdict("unavailable", why);
}

async function checkThisReceipt(section) {
  const list = $("browser-checks");
  for (const li of [...list.children]) li.replaceWith(checkItem(li.dataset.check, "pending", "Checking\u2026"));
  section.dataset.outcome = "checking";
  browserVerdict("checking");
  let keys;
  try {
    keys = await loadKeys();
  } catch (error) {
    return unavailable(section, `the published keys could not be loaded (${error.message})`);
  }
  const shown = {};
  for (const node of document.querySelectorAll("[data-signed]")) {
    const field = node.dataset.signed;
    // The chain position reads "#<seq>".
    shown[field] = field === "seq" ? node.textContent.replace(/^#/, "") : node.textContent;
  }
  shown.valid = String($("verdict").dataset.server === "valid");
  showPageResult(section, await checkReceiptPage($("signed-receipt").textContent, keys, shown));
}

function startReceiptPage() {
  const section = $("browser-check");
  if (!section || !$("signed-receipt")) return;
  checkThisReceipt(section).catch((error) => unavailable(section, `the check stopped (${error && error.message})`));
}

function start() {
  if (!$("check-form")) return startReceiptPage();
  const form = $("check-form");
  const input = $("receipt-input");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (text === "") return input.focus();
    if (!text.startsWith("{")) {
      const view = viewUrlOf(text);
      if (view) return location.assign(view);
    }
    check(text).catch((error) => show(null, { ok: false, reason: String(error && error.message) }, false));
  });
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
