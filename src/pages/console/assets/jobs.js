// Progress of a verify or export job the page just started: polls
// GET /v1/jobs/:id (through the console's session) until the job ends.
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
      return;
    }
    await new Promise((r) => setTimeout(r, 700));
  }
}

for (const box of document.querySelectorAll(".job-watch[data-job]")) watch(box);
