// Issue 2 benchmark: single-event ingest vs the baseline no-op POST, and batch ingest against two floors
// timed in the same run: the same inserts through local D1 (no Witness work), and SQLite alone.
import { batchLoad, createKey, fmt, sampleEvent, wrk } from "./lib.mjs";
import { sqliteInsertFloor } from "./sqlite-floor.mjs";

export default async function ingestBench({ url, runtimeUrl, baselineUrl, baselineRuntimeUrl, persistDir, report }) {
  const body = JSON.stringify(sampleEvent(1));
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  const key = createKey(persistDir, "bench-ingest");
  const headers = { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "127.0.0.3" };
  const round = Math.max(1, Math.round(seconds / 2));
  const noop = () => wrk({ url: `${baselineUrl}/noop`, body, seconds: round });
  const ingest = () => wrk({ url: `${url}/v1/events`, body, headers, seconds: round });

  // Warm both up so JIT and connections are settled before timing.
  wrk({ url: `${baselineUrl}/noop`, body, seconds: 2 });
  wrk({ url: `${url}/v1/events`, body, headers, seconds: 2 });
  // Alternating rounds: this shared machine's speed drifts over a minute, and a ratio
  // of two runs taken one after the other measured the drift as much as the service.
  const rounds = [];
  for (let i = 0; i < 3; i++) rounds.push({ baseline: noop(), single: ingest() });
  if (rounds.some((r) => r.single.errors > 0)) throw new Error("ingest requests failed during the benchmark");
  const mean = (pick) => rounds.reduce((sum, r) => sum + pick(r), 0) / rounds.length;
  const baseline = { rps: mean((r) => r.baseline.rps) };
  const single = { rps: mean((r) => r.single.rps), p50: mean((r) => r.single.p50), p99: mean((r) => r.single.p99) };

  // Live events carry no occurred_at (they happen as they are sent), so every index on time grows
  // at its end; a backfill spreads occurred_at over a year and inserts all over those indexes.
  const batchTotal = Number(process.env.BENCH_BATCH_EVENTS ?? 100_000);
  const live = (i) => ({ ...sampleEvent(i), occurred_at: undefined });
  const batch = await batchLoad({ url, key: createKey(persistDir, "bench-batch"), total: batchTotal, makeEvent: live });
  const backfill = await batchLoad({ url, key: createKey(persistDir, "bench-backfill"), total: batchTotal });
  const liveAtRuntime = await batchLoad({ url: runtimeUrl, key: createKey(persistDir, "bench-batch-runtime"), total: batchTotal, makeEvent: live });

  // The same load, the same inserts, through local D1 with no Witness work (baseline/d1-insert-floor.ts):
  // what wrangler dev's D1 itself costs, which the SQLite floor below leaves out.
  const d1Floor = await batchLoad({ url: `${baselineUrl}/d1-insert-floor`, key: "none", total: batchTotal, makeEvent: live });
  const d1FloorAtRuntime = await batchLoad({ url: `${baselineRuntimeUrl}/d1-insert-floor`, key: "none", total: batchTotal, makeEvent: live });
  const floor = sqliteInsertFloor({ total: batchTotal });
  const ofFloors = (rate, d1) => `${fmt.pct(rate / d1)} of the D1 floor, ${fmt.pct(rate / floor.perSecond)} of the SQLite floor; target >= 50% of SQLite`;

  report("Ingest (wrangler dev, wrk -c32, three alternating rounds of each)", [
    ["baseline no-op POST", fmt.rate(baseline.rps, "req/s")],
    ["single-event ingest", `${fmt.rate(single.rps, "events/s")} (${fmt.pct(single.rps / baseline.rps)} of baseline; target >= 70%)`],
    ["single-event p50 / p99", `${fmt.ms(single.p50)} / ${fmt.ms(single.p99)}`],
    ["batch ingest, live events (100/request, 6 in flight)", `${fmt.rate(batch.perSecond, "events/s")} over ${batch.total.toLocaleString("en-US")} events (${ofFloors(batch.perSecond, d1Floor.perSecond)})`],
    ["batch ingest, backfill over a year (same)", `${fmt.rate(backfill.perSecond, "events/s")} over ${backfill.total.toLocaleString("en-US")} events`],
    ["D1 floor (same inserts through local D1, no Witness work)", `${fmt.rate(d1Floor.perSecond, "events/s")} over ${d1Floor.total.toLocaleString("en-US")} events`],
    ["SQLite alone, the same INSERTs of live events, no fsync (ceiling)", `${fmt.rate(floor.perSecond, "events/s")} over ${floor.total.toLocaleString("en-US")} events`],
    ["batch ingest, live events, at the runtime (no dev proxy)", `${fmt.rate(liveAtRuntime.perSecond, "events/s")} over ${liveAtRuntime.total.toLocaleString("en-US")} events (${ofFloors(liveAtRuntime.perSecond, d1FloorAtRuntime.perSecond)}, D1 floor there)`],
    ["D1 floor at the runtime (no dev proxy)", `${fmt.rate(d1FloorAtRuntime.perSecond, "events/s")} over ${d1FloorAtRuntime.total.toLocaleString("en-US")} events`],
  ]);
}
