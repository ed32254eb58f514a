// Progress of a verify or export job the page just started: polls
// GET /v1/jobs/:id (through the console's session) until the job ends. An
// evidence export (its last file is manifest.json) gets "Check in this
// browser": its files are downloaded and checked here with the client's own
// dependency-free check (src/client/evidence-check.js) against the log's vkey.
import { checkEvidence } from "../../../client/evidence-check.js";
import { loadCrypto } from "../../../client/web-crypto.js";

const ENDED = new Set(["succeeded", "failed", "canceled"]);

function el(tag, props = {}, text) {
  const node = Object.assign(document.createElement(tag), props);
  if (text !== undefined) node.textContent = text;
  return node;
}

const count = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
const plural = (n, one, many = `${one}s`) => `${count(n)} ${n === 1 ? one : many}`;

/** Where each leaf of the signed tree went, as the page's own table says it (jobs-view.tsx, verifyTally). */
function tally(r) {
  const n = (v) => (typeof v === "number" && Number.isFinite(v) ? v : 0);
  const gaps = Array.isArray(r.gaps) ? r.gaps : [];
  const t = { checked: n(r.verified), unsigned: n(r.unsigned), erased: n(r.anonymized), purged: gaps.reduce((s, g) => s + n(g?.purged_count), 0) + n(r.purged_before_checkpoint), gaps: gaps.length };
  t.walked = t.checked + t.unsigned + t.erased + t.purged;
  t.treeSize = n(r.checkpoint?.tree_size);
  return t;
}

function outcome(job) {
  if (job.status !== "succeeded") return job.error ? `${job.error.code}: ${job.error.message}` : job.status;
  if (job.type === "verify") {
    const r = job.result ?? {};
    const t = tally(r);
    if (!r.ok) return `Failed: ${r.failure?.reason ?? "the chain is broken"}${r.failure?.event_id ? ` at event ${r.failure.event_id}` : ""}.`;
    return t.walked === t.treeSize
      ? `Intact: all ${plural(t.treeSize, "event")} in the signed tree accounted for.`
      : `Intact: ${plural(t.walked, "event")} accounted for, against a signed tree of ${plural(t.treeSize, "event")}.`;
  }
  return `Export ready: ${plural((job.files ?? []).length, "file")}.`;
}

/** The verify's counts, adding up to the signed tree (or saying what they miss). */
function tallyList(r) {
  const t = tally(r);
  const list = el("ul", { className: "tally" });
  const line = (text, className) => list.append(el("li", className ? { className } : {}, text));
  line(`${count(t.checked)} checked: hash, signature, chain link and log leaf`);
  if (t.unsigned > 0) line(`+ ${count(t.unsigned)} unsigned (recorded before signing began): hash, chain link and log leaf`);
  line(`+ ${count(t.erased)} with personal data erased: checked against the ledger's erasure record`);
  line(`+ ${count(t.purged)} in retention gaps${t.gaps > 0 ? ` (${plural(t.gaps, "signed gap record")})` : ""}: purged under the retention plan`);
  const diff = t.treeSize - t.walked;
  line(
    diff === 0
      ? `= ${plural(t.treeSize, "event")} in the signed tree`
      : `= ${plural(t.walked, "event")} ${r.ok ? "walked" : "walked before it stopped"}, of ${plural(t.treeSize, "event")} in the signed tree`,
    "sum",
  );
  if (diff !== 0) {
    line(
      !r.ok
        ? "It stopped at the failure: the events after it were not checked."
        : diff < 0
          ? `${plural(-diff, "event")} recorded after that tree was signed: checked against the chain; the next verify checks their log leaves.`
          : `${plural(diff, "event")} not walked: recorded after the verify began, or in retention gaps an earlier verify counted (an incremental verify lists only new gaps), or outside a verify's time window.`,
      "note",
    );
  }
  return list;
}

async function watch(box) {
  const id = box.dataset.job;
  const title = el("p", { className: "job-title" }, `Job ${id}`);
  const bar = el("progress", { max: 1, value: 0 });
  bar.setAttribute("aria-label", "Job progress");
  const line = el("p", {}, "Starting…");
  line.setAttribute("role", "status");
  const files = el("ul", { className: "plain" });
  box.append(title, bar, line, files);
  for (;;) {
    let job;
    try {
      const res = await fetch(`/console/api/v1/jobs/${encodeURIComponent(id)}`, { headers: { Accept: "application/json" } });
      const body = await res.json();
      if (!res.ok) {
        line.textContent = body?.error?.message ?? `HTTP ${res.status}`;
        return;
      }
      job = body.data;
    } catch (error) {
      line.textContent = `Lost track of the job: ${error.message}`;
      return;
    }
    bar.max = Math.max(job.progress.total, 1);
    bar.value = Math.min(job.progress.done, bar.max);
    title.textContent = `${job.type === "verify" ? "Verify" : "Export"} ${job.status}`;
    line.textContent = `${count(job.progress.done)} of ${job.type === "verify" ? `${plural(job.progress.total, "chunk")} checked` : `${plural(job.progress.total, "row")} written`}`;
    if (ENDED.has(job.status)) {
      if (job.status === "succeeded") bar.value = bar.max;
      box.dataset.status = job.status;
      line.textContent = outcome(job);
      if (job.type === "verify" && job.status === "succeeded") line.after(tallyList(job.result ?? {}));
      for (const f of job.type === "export" ? (job.files ?? []) : []) {
        const li = el("li");
        li.append(el("a", { href: `/console/api/v1/jobs/${encodeURIComponent(id)}/files/${encodeURIComponent(f.name)}`, download: f.name }, f.name), ` (${plural(f.rows, "row")})`);
        files.append(li);
      }
      if (job.status === "succeeded" && isEvidence(job)) box.append(checker(id));
      return;
    }
    await new Promise((r) => setTimeout(r, 700));
  }
}

const isEvidence = (job) => job.type === "export" && (job.files ?? []).some((f) => f.name === "manifest.json");

async function apiJson(path) {
  const res = await fetch(`/console/api/v1${path}`, { headers: { Accept: "application/json" } });
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new Error(body?.error?.message ?? `HTTP ${res.status}`);
  return body.data;
}

/** Downloads an evidence export's files and checks them here; the verdict in words, green or red. */
async function checkInBrowser(id, out) {
  out.className = "evidence-result pending";
  out.textContent = "Downloading the files and checking them in this browser…";
  let verdict;
  try {
    await loadCrypto();
    const [job, log] = await Promise.all([apiJson(`/jobs/${encodeURIComponent(id)}`), apiJson("/log")]);
    const file = (name) => `/console/api/v1/jobs/${encodeURIComponent(id)}/files/${encodeURIComponent(name)}`;
    const manifest = await fetch(file("manifest.json"));
    if (!manifest.ok) throw new Error(`manifest.json could not be downloaded (HTTP ${manifest.status})`);
    const result = await checkEvidence({
      manifest: await manifest.text(),
      vkey: log.vkey,
      names: (job.files ?? []).map((f) => f.name),
      readFile: async (name) => {
        const res = await fetch(file(name));
        return res.ok ? new Uint8Array(await res.arrayBuffer()) : null;
      },
    });
    verdict = result.ok
      ? {
          ok: true,
          text:
            `Checked in this browser: ${result.rows === 1 ? "its 1 row recomputes to its hash and sits" : `all ${plural(result.rows, "row")} recompute to their hashes and sit`} in the log's signed tree of ${plural(result.tree_size, "event")}` +
            `${result.erased ? ` (${count(result.erased)} with personal data lawfully erased)` : ""}; ` +
            (result.complete ? "the export is complete: every event up to that size is in it or in a signed retention gap." : "the export is filtered, so only the rows it holds are proven."),
        }
      : { ok: false, text: `Check failed in this browser: ${result.reason}.` };
  } catch (error) {
    verdict = { ok: false, text: `Check failed in this browser: ${error.message}` };
  }
  out.className = `evidence-result ${verdict.ok ? "ok" : "bad"}`;
  out.dataset.state = verdict.ok ? "ok" : "bad";
  out.textContent = verdict.text;
}

function checker(id) {
  const wrap = el("div", { className: "evidence" });
  const button = el("button", { type: "button", className: "evidence-check" }, "Check in this browser");
  button.dataset.job = id;
  const out = el("p", { className: "evidence-result" });
  out.setAttribute("role", "status");
  out.setAttribute("aria-live", "polite");
  wrap.append(button, out);
  return wrap;
}

// One handler for every "Check in this browser" button, the server's rows' and the watched job's.
document.addEventListener("click", (event) => {
  const button = event.target.closest?.("button.evidence-check");
  if (!button) return;
  const out = button.parentElement.querySelector(".evidence-result");
  button.disabled = true;
  checkInBrowser(button.dataset.job, out).finally(() => (button.disabled = false));
});

for (const box of document.querySelectorAll(".job-watch[data-job]")) watch(box);
