// Issue 21: the chunked verify's speed-up with 1, 2 and 4 chunks in parallel, each chunk in a runtime
// of its own. wrangler dev runs a Worker, its Durable Objects and its Workflows on one thread, so
// chunks "in parallel" inside one runtime only interleave (the jobs bench's sweep shows it). Here the
// jobs bench's project (BENCH_DATA, loaded by jobs-load.mjs) is copied once per runtime, each copy gets
// its own wrangler dev, and a driver plans the verify in the first, sends chunk i to whichever runtime
// is free (each checks it in a VerifyChunk object, as in production) and merges in the first: the
// same plan, chunk checks and merge as GET /v1/events/verify (jobs-entry.ts's /__bench routes).
// What it cannot show: more speed-up than this machine has cores.
import { execFileSync } from "node:child_process";
import { availableParallelism } from "node:os";
import { rmSync } from "node:fs";
import { PROJECT, storedNow } from "./jobs-load.mjs";
import { fmt, startWitness } from "./lib.mjs";

const SWEEP = (process.env.BENCH_PARALLEL_SWEEP ?? "1,2,4").split(",").filter(Boolean).map(Number);

async function post(base, part, body) {
  const res = await fetch(`${base}/__bench/${part}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${part} answered ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/** One whole verify: planned and merged in the first runtime, its chunks `parallel` at a time over the runtimes, one each. */
async function verifyAcross(runtimes, parallel) {
  const plan = await post(runtimes[0], "plan", { project: PROJECT });
  const results = [];
  let next = 0;
  const slot = async (base) => {
    for (let i = next++; i < plan.chunks.length; i = next++) results[i] = await post(base, "chunk", { plan, index: i });
  };
  await Promise.all(runtimes.slice(0, parallel).map(slot));
  return { chunks: plan.chunks.length, result: await post(runtimes[0], "merge", { plan, results }) };
}

export default async function parallelBench({ persistDir, port, report }) {
  const events = storedNow(persistDir).all;
  if (events === 0) throw new Error(`${persistDir} holds no ${PROJECT}: load it first (npm run bench -- load)`);
  const copies = Array.from({ length: Math.max(...SWEEP) }, (_, k) => `${persistDir}-parallel-${k}`);
  const services = [];
  try {
    console.log(`\nCopying ${PROJECT} (${events.toLocaleString("en-US")} events) for ${copies.length} runtimes...`);
    for (const copy of copies) {
      rmSync(copy, { recursive: true, force: true });
      execFileSync("cp", ["-a", persistDir, copy]);
    }
    // All started before any is timed: a wrangler dev that starts later reloads those running.
    for (const [k, copy] of copies.entries()) services.push(await startWitness({ port: port + k, persistDir: copy, script: "test/bench/jobs-entry.ts" }));
    const runtimes = await Promise.all(services.map((s) => s.runtimeUrl()));
    // Warm-up: JIT and key import in every runtime, on the first chunk.
    for (const base of runtimes) {
      const plan = await post(base, "plan", { project: PROJECT });
      await post(base, "chunk", { plan, index: 0 });
    }
    const rows = [];
    let one = null;
    for (const parallel of SWEEP) {
      const started = performance.now();
      const { chunks, result } = await verifyAcross(runtimes, parallel);
      const seconds = (performance.now() - started) / 1000;
      if (!result.ok || result.verified !== events) throw new Error(`verify across ${parallel} runtimes did not pass cleanly over ${events} events: ${JSON.stringify(result)}`);
      one ??= seconds;
      rows.push([
        `${parallel} chunk${parallel > 1 ? "s" : ""} at a time, one runtime each (${chunks} chunks)`,
        `${fmt.rate(events / seconds, "events/s")}, ${seconds.toFixed(1)} s: x${(one / seconds).toFixed(2)} of one at a time`,
      ]);
    }
    report(`Verify chunks in separate runtimes (${PROJECT}: ${events.toLocaleString("en-US")} events; this machine has ${availableParallelism()} cores)`, rows);
  } finally {
    await Promise.all(services.map((s) => s.stop()));
    for (const copy of copies) rmSync(copy, { recursive: true, force: true });
  }
}
