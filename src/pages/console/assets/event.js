// The event page's integrity panel: fetches the event's signed receipt and the
// service's published keys, and runs the client's own dependency-free check
// (src/client/receipt-check.js) here, in the browser: the receipt's Ed25519
// proof, and its inclusion proof against the log's signed checkpoint.
import { parsePublicKeys, readReceipt, verifyReceipt } from "../../../client/receipt-check.js";
import { loadCrypto } from "../../../client/web-crypto.js";

const box = document.getElementById("proof");
const verdict = document.getElementById("proof-verdict");
const steps = document.getElementById("proof-steps");

function step(ok, text) {
  const li = document.createElement("li");
  li.textContent = `${ok ? "\u2713" : "\u2717"} ${text}`;
  steps.append(li);
}

function finish(state, text) {
  box.classList.remove("pending");
  box.classList.add(state);
  box.dataset.state = state;
  verdict.textContent = text;
}

async function check() {
  const id = box.dataset.eventId;
  try {
    await loadCrypto();
    const [receiptRes, keysRes] = await Promise.all([
      fetch(`/console/api/v1/events/${encodeURIComponent(id)}/receipt`, { headers: { Accept: "application/json" } }),
      fetch("/.well-known/witness-keys.json"),
    ]);
    const text = await receiptRes.text();
    if (!receiptRes.ok) {
      let message = `HTTP ${receiptRes.status}`;
      try {
        message = JSON.parse(text).error.message;
      } catch {}
      return finish("bad", `Could not check in this browser: the receipt was refused (${message}).`);
    }
    const keys = parsePublicKeys(await keysRes.text());
    const receipt = readReceipt(text);
    const result = await verifyReceipt(text, keys);
    const matches = receipt.event_id === id && receipt.seq === Number(box.dataset.seq) && receipt.hash === box.dataset.hash;
    step(matches, matches ? "The receipt names this event: same id, seq and hash as shown here." : "The receipt does not match the event shown here (id, seq or hash differ).");
    if (!result.ok && receipt.valid === false && /^the receipt is genuine/.test(result.reason)) {
      // Genuine, signed just now, and saying that Witness's own check of the stored row failed: a tamper, in plain words.
      step(true, "The receipt is genuine: signed with the service's published key.");
      step(false, "It says the stored event no longer matches its hash, signature or links in the chain.");
      return finish("bad", "Check failed in this browser: this event was altered after it was recorded. Its genuine receipt says the stored event no longer matches what was committed; the public receipt page shows which check failed.");
    }
    if (!result.ok) {
      step(false, result.reason);
      return finish("bad", `Check failed in this browser: ${result.reason}`);
    }
    step(true, `The receipt's signature is valid under the published key ${result.kid}.`);
    if (!result.tlog) {
      step(false, "The event is not in the transparency log's signed tree yet; reload shortly.");
      return finish("bad", "Not fully checked: the receipt is genuine, but the event has no inclusion proof yet.");
    }
    const t = result.tlog;
    step(true, `Its inclusion proof puts it at leaf ${t.index} of the signed tree of ${t.tree_size} events.`);
    step(true, `That checkpoint is signed by the log ${t.origin} with the published key${t.kid ? ` ${t.kid}` : ""}.`);
    if (!matches) return finish("bad", "Check failed in this browser: the receipt is for another version of this event.");
    finish("ok", `Checked in this browser: this event is in the project's log (leaf ${t.index} of ${t.tree_size}) and unaltered.`);
  } catch (error) {
    finish("bad", `Check failed in this browser: ${error.message}`);
  }
}

if (box) check();
