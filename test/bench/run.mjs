// npm run bench: every benchmark in one run, against wrangler dev on this machine.
// BENCH_EVENTS (default 1,000,000) sizes the large project the read and verify benches use.
import { existsSync } from "node:fs";
import { batchLoad, createKey, ensureWrk, fmt, report, startBaseline, startWitness, tempDir } from "./lib.mjs";

const total = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const only = process.argv.slice(2);
const want = (name) => only.length === 0 || only.includes(name);

ensureWrk();
const persistDir = tempDir("witness");
// Baseline first: a wrangler dev that starts later reloads the ones already
// running (dev registry), which would cut off requests in flight.
const baseline = await startBaseline({ port: 8871 });
const service = await startWitness({ port: 8870, persistDir });
await new Promise((r) => setTimeout(r, 3000));
const ctx = { url: service.url, baselineUrl: baseline.url, processes: service.processes, inspectorPort: service.inspectorPort, persistDir, report };

try {
  if (want("ingest")) await (await import("./ingest.bench.mjs")).default(ctx);

  const modules = ["reads", "verify"].filter((m) => want(m) && existsSync(new URL(`./${m}.bench.mjs`, import.meta.url)));
  if (modules.length > 0) {
    const projectId = "bench-large";
    const key = createKey(persistDir, projectId);
    console.log(`\nLoading ${total.toLocaleString("en-US")} events into ${projectId} through the batch endpoint...`);
    const load = await batchLoad({ url: service.url, key, total });
    report("Bulk load", [["batch ingest into one project", `${fmt.rate(load.perSecond, "events/s")} (${load.seconds.toFixed(0)} s)`]]);
    for (const m of modules) await (await import(`./${m}.bench.mjs`)).default({ ...ctx, key, projectId, total });
  }
} finally {
  service.stop();
  baseline.stop();
}
