// Issue 2 benchmark: single-event ingest vs the baseline no-op POST, and batch ingest.
import { batchLoad, createKey, fmt, sampleEvent, wrk } from "./lib.mjs";

export default async function ingestBench({ url, baselineUrl, persistDir, report }) {
  const body = JSON.stringify(sampleEvent(1));
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);

  // Warm both up so JIT and connections are settled before timing.
  wrk({ url: `${baselineUrl}/noop`, body, seconds: 2 });
  const baseline = wrk({ url: `${baselineUrl}/noop`, body, seconds });

  const key = createKey(persistDir, "bench-ingest");
  const headers = { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "127.0.0.3" };
  wrk({ url: `${url}/v1/events`, body, headers, seconds: 2 });
  const single = wrk({ url: `${url}/v1/events`, body, headers, seconds });
  if (single.errors > 0) throw new Error(`${single.errors} ingest requests failed during the benchmark`);

  const batchKey = createKey(persistDir, "bench-batch");
  const batch = await batchLoad({ url, key: batchKey, total: Number(process.env.BENCH_BATCH_EVENTS ?? 100_000) });

  report("Ingest (wrangler dev, wrk -c32)", [
    ["baseline no-op POST", fmt.rate(baseline.rps, "req/s")],
    ["single-event ingest", `${fmt.rate(single.rps, "events/s")} (${fmt.pct(single.rps / baseline.rps)} of baseline; target >= 70%)`],
    ["single-event p50 / p99", `${fmt.ms(single.p50)} / ${fmt.ms(single.p99)}`],
    ["batch ingest (100/request, 6 in flight)", `${fmt.rate(batch.perSecond, "events/s")} over ${batch.total.toLocaleString("en-US")} events (target >= 10,000)`],
  ]);
}
