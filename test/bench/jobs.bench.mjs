// Issue 21 benchmark: whole-project jobs on a large project, most of it archived (jobs-load.mjs).
// BENCH_JOB_EVENTS (default 10,000,000) sizes it. Measures, each phase with its own meter report
// (the worst invocation of each operation against Cloudflare's per-invocation limits), the
// runtime's CPU and the Worker's memory:
// - the full verify job (POST /v1/jobs {type: "verify"}) against the SHA-256 + HMAC + leaf-hash
//   loop of verify.bench.mjs over as many events, in alternating order;
// - the chunked engine with 1, 2 and 4 chunks at a time (jobs-entry.ts's bench route);
// - incremental verify after 10,000 new events (GET /v1/events/verify?since=checkpoint, and a
//   verify job asked the same);
// - export jobs (CSV): the archived part alone (its date range) and the whole project; run.mjs then
//   times the archived-export floor (archived-export-floor.bench.mjs) once the service has stopped.
import { COLD_YEAR } from "./archive-helpers.mjs";
import { PROJECT, prepareJobsProject, storedNow } from "./jobs-load.mjs";
import { batchLoad, cpuSeconds, fmt, httpGet, reportMeter, resetMeter, sampleEvent, sampleHeap, sampleRss } from "./lib.mjs";

/** A sampleEvent received now (no occurred_at): the increment lands after every loaded event. */
function liveEvent(i) {
  const { occurred_at: _, ...event } = sampleEvent(i);
  return event;
}

const INCREMENT = Number(process.env.BENCH_JOB_INCREMENT ?? 10_000);
/** The chunked engine's parallelism sweep ("" skips it: at 10M each run is minutes) and the export jobs' rounds (0 skips them). */
const SWEEP = (process.env.BENCH_JOB_PARALLEL ?? "1,2,4").split(",").filter(Boolean).map(Number);
const EXPORT_ROUNDS = Number(process.env.BENCH_JOB_EXPORT_ROUNDS ?? 2);
async function getJson(url, headers) {
  const res = await httpGet(url, headers);
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${String(res.body).slice(0, 300)}`);
  return JSON.parse(res.body);
}

async function postJson(url, headers, body) {
  const res = await fetch(url, { method: "POST", headers: { ...headers, "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status !== 202) throw new Error(`POST ${url} answered ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

export default async function jobsBench(ctx) {
  const total = Number(process.env.BENCH_JOB_EVENTS ?? 10_000_000);
  const { url, runtimeUrl, baselineRuntimeUrl, persistDir, processes, inspectorPort, report } = ctx;

  await resetMeter(url);
  const { key, cold } = await prepareJobsProject({ runtimeUrl, persistDir, total, report });
  await reportMeter(url, "jobs: load and archive (this run's part of it)");
  const headers = { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "127.0.0.22" };
  const rows = [];
  const limitRows = [];

  /**
   * One phase: the meter reset before and reported after, the runtime's CPU, the Worker's heap
   * and the runtime's RSS (before, and peak while it ran).
   */
  async function phase(title, work) {
    await resetMeter(url);
    const pid = processes().runtime;
    const rssBefore = sampleRss(pid).stop();
    const rss = sampleRss(pid);
    const heap = await sampleHeap(inspectorPort);
    const cpu0 = cpuSeconds(pid);
    const started = performance.now();
    const value = await work();
    const seconds = (performance.now() - started) / 1000;
    const cpu = cpuSeconds(pid) - cpu0;
    const heapPeak = await heap.stop();
    const rssPeak = rss.stop();
    const memory = `heap ${heap.beforeMiB.toFixed(0)} -> peak ${heapPeak.toFixed(0)} MiB, RSS ${rssBefore.toFixed(0)} -> peak ${rssPeak.toFixed(0)} MiB`;
    const meter = await reportMeter(url, `jobs: ${title}`);
    const worst = meter.filter((r) => r.d1Queries > 0 || r.subrequests > 0).slice(0, 3);
    limitRows.push([title, worst.map((r) => `${r.invocation} ${r.d1Queries} q / ${r.subrequests} sub`).join("; ")]);
    return { value, seconds, cpu, memory };
  }

  /** A job from POST to its end, polled every 250 ms (one D1 read each); returns the finished job. */
  async function runJob(body) {
    const { data } = await postJson(`${runtimeUrl}/v1/jobs`, headers, body);
    let last = 0;
    for (;;) {
      await new Promise((r) => setTimeout(r, 250));
      const { data: job } = await getJson(`${runtimeUrl}/v1/jobs/${data.id}`, headers);
      if (["succeeded", "failed", "canceled"].includes(job.status)) {
        if (job.status !== "succeeded") throw new Error(`job ${JSON.stringify(body)} ${job.status}: ${JSON.stringify(job.error)}`);
        return job;
      }
      if (performance.now() - last > 30_000) {
        last = performance.now();
        console.log(`  job ${body.type}: ${job.status}, ${job.progress.done.toLocaleString("en-US")} of ${job.progress.total.toLocaleString("en-US")}`);
      }
    }
  }

  const expectVerified = (result, n, what) => {
    if (!result.ok || result.verified !== n) throw new Error(`${what} did not pass cleanly over ${n} events: ${JSON.stringify(result)}`);
  };

  const stored = storedNow(persistDir);
  const n = stored.all;
  const N = n.toLocaleString("en-US");
  console.log(`\n${PROJECT}: ${N} events (${stored.archived.toLocaleString("en-US")} archived in ${stored.segments} segments, ${stored.hot.toLocaleString("en-US")} hot)`);

  // Warm-up: JIT, key import, a small verify window and loop.
  await getJson(`${baselineRuntimeUrl}/crypto-loop?n=${Math.min(n, 200_000)}`);
  await getJson(`${runtimeUrl}/v1/events/verify?to=2025-01-02T00:00:00Z`, headers);

  // 1. The loop and the full verify job, alternating: loop, job, loop (the loop's mean is the ceiling).
  const loop = async () => {
    const started = performance.now();
    await getJson(`${baselineRuntimeUrl}/crypto-loop?n=${n}`);
    return n / ((performance.now() - started) / 1000);
  };
  const loop1 = await loop();
  const full = await phase("full verify job", () => runJob({ type: "verify" }));
  const loop2 = await loop();
  expectVerified(full.value.result, n, "the verify job");
  const ceiling = (loop1 + loop2) / 2;
  const chunks = full.value.progress.total;
  const jobRate = n / full.seconds;
  rows.push(["SHA-256 + HMAC + leaf loop, same events (before / after the job)", `${fmt.rate(loop1, "events/s")} / ${fmt.rate(loop2, "events/s")}`]);
  rows.push([
    `verify job, ${chunks} chunks of ${Math.ceil(n / chunks).toLocaleString("en-US")}, VERIFY_PARALLELISM (default 8) at a time`,
    `${fmt.rate(jobRate, "events/s")} (${fmt.pct(jobRate / ceiling)} of the loop; goal >= 60%), ${full.seconds.toFixed(1)} s; runtime CPU ${full.cpu.toFixed(0)} s (${((1000 * full.cpu) / (chunks + 3)).toFixed(0)} ms a step on average, ${chunks + 3} steps)`,
  ]);
  rows.push(["  memory during the verify job", full.memory]);

  // 2. The chunked engine with 1, 2 and 4 chunks at a time (each chunk a VerifyChunk object call).
  const engine = {};
  for (const parallel of SWEEP) {
    const run = await phase(`chunked verify, ${parallel} at a time`, () => getJson(`${runtimeUrl}/__bench/verify?project=${PROJECT}&parallel=${parallel}`));
    expectVerified(run.value.data, n, `the chunked verify (${parallel} at a time)`);
    engine[parallel] = run;
    rows.push([
      `chunked engine, ${parallel} chunk${parallel > 1 ? "s" : ""} at a time (one request)`,
      `${fmt.rate(n / run.seconds, "events/s")}, ${run.seconds.toFixed(1)} s${parallel > 1 ? ` (x${(engine[SWEEP[0]].seconds / run.seconds).toFixed(2)} of ${SWEEP[0]} at a time)` : ""}; runtime CPU ${run.cpu.toFixed(0)} s; ${run.memory}`,
    ]);
  }

  // 3. Incremental verify after INCREMENT new events, from the checkpoint the last full verify left.
  const more = await batchLoad({ url: runtimeUrl, key, total: INCREMENT, concurrency: 4, makeEvent: (i) => liveEvent(total + i), ip: "127.0.0.23" });
  const grown = storedNow(persistDir).all;
  if (grown !== n + INCREMENT) throw new Error(`after ${INCREMENT} more events ${PROJECT} holds ${grown}, expected ${n + INCREMENT}`);
  const since = await phase("incremental verify (GET ?since=checkpoint)", () => getJson(`${runtimeUrl}/v1/events/verify?since=checkpoint`, headers));
  expectVerified(since.value.data, grown, "the incremental verify");
  rows.push([
    `incremental verify after ${INCREMENT.toLocaleString("en-US")} new events (${fmt.rate(more.perSecond, "events/s")} to add)`,
    `GET /v1/events/verify?since=checkpoint: ${since.seconds.toFixed(2)} s (goal < 2 s), verified ${grown.toLocaleString("en-US")}; runtime CPU ${since.cpu.toFixed(1)} s`,
  ]);
  const sinceJob = await phase("incremental verify job (since: checkpoint)", () => runJob({ type: "verify", since: "checkpoint" }));
  expectVerified(sinceJob.value.result, grown, "the verify job asked since the checkpoint");
  const walkedAll = sinceJob.value.progress.total >= chunks;
  rows.push([
    "  the same as a job: POST /v1/jobs {type: verify, since: checkpoint}",
    `${sinceJob.seconds.toFixed(2)} s, ${sinceJob.value.progress.total} chunks${walkedAll ? " (the whole history: the job does not start from the checkpoint)" : ""}`,
  ]);

  // 4. Export jobs, CSV: the archived part alone (its date range: only archived events occurred in 2025), then everything.
  // Two alternating rounds, best of each: the first export after the verifies reads cold files.
  const exportJob = async (title, body, expected) => {
    const run = await phase(title, () => runJob({ type: "export", format: "csv", ...body }));
    const written = run.value.files.reduce((s, f) => s + f.rows, 0);
    if (written !== expected) throw new Error(`${title}: ${written} rows written, expected ${expected}`);
    return { ...run, rate: written / run.seconds, parts: run.value.files.length };
  };
  const exportsRun = { archived: [], whole: [] };
  for (let round = 0; round < EXPORT_ROUNDS; round++) {
    exportsRun.archived.push(await exportJob("export job, archived part (CSV)", { date_from: COLD_YEAR[0], date_to: COLD_YEAR[1] }, cold));
    exportsRun.whole.push(await exportJob("export job, whole project (CSV)", {}, grown));
  }
  for (const [name, runs] of Object.entries(exportsRun)) {
    if (runs.length === 0) continue;
    const best = runs.reduce((a, b) => (b.rate > a.rate ? b : a));
    rows.push([
      `export job, ${name === "archived" ? "archived part" : "whole project"} (CSV), ${best.parts} files, best of ${runs.length}`,
      `${fmt.rate(best.rate, "rows/s")} (rounds: ${runs.map((r) => Math.round(r.rate).toLocaleString("en-US")).join(", ")}), ${best.seconds.toFixed(1)} s; runtime CPU ${best.cpu.toFixed(0)} s (${((1000 * best.cpu) / (best.parts + 3)).toFixed(0)} ms a step on average); ${best.memory}`,
    ]);
  }
  const archivedExport = EXPORT_ROUNDS > 0 ? Math.max(...exportsRun.archived.map((r) => r.rate)) : null;

  report(`Jobs (${PROJECT}: ${N} events before this run's increment, ${stored.archived.toLocaleString("en-US")} archived; runtime ${runtimeUrl})`, rows);
  report("Jobs: the three busiest invocations of each phase (D1 queries / subrequests; limits 1,000 / 10,000)", limitRows);
  return { archivedExport, cold, verified: n, verifyRate: jobRate, loopRate: ceiling };
}
