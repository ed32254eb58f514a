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

function outcome(job) {
  if (job.status !== "succeeded") return job.error ? `${job.error.code}: ${job.error.message}` : job.status;
  if (job.type === "verify") {
    const r = job.result ?? {};
    return r.ok ? `Intact: ${r.verified} events checked.` : `Failed: ${r.failure?.reason ?? "the chain is broken"}${r.failure?.event_id ? ` at event ${r.failure.event_id}` : ""}.`;
  }
  return `Export ready: ${(job.files ?? []).length} file(s).`;
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
    line.textContent = `${job.progress.done} of ${job.progress.total} ${job.type === "verify" ? "chunks checked" : "rows written"}`;
    if (ENDED.has(job.status)) {
      if (job.status === "succeeded") bar.value = bar.max;
      box.dataset.status = job.status;
      line.textContent = outcome(job);
      for (const f of job.type === "export" ? (job.files ?? []) : []) {
        const li = el("li");
        li.append(el("a", { href: `/console/api/v1/jobs/${encodeURIComponent(id)}/files/${encodeURIComponent(f.name)}`, download: f.name }, f.name), ` (${f.rows} rows)`);
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
            `Checked in this browser: all ${result.rows} rows recompute to their hashes and sit in the log's signed tree of ${result.tree_size} events` +
            `${result.erased ? ` (${result.erased} with personal data lawfully erased)` : ""}; ` +
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
