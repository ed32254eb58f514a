// Issue 38: a burst past what one project's ledger can take. BENCH_BURST_RATE (default 20,000)
// events/s from BENCH_BURST_KEYS (20) keys of one new project for BENCH_BURST_SECONDS (30), in
// batches of 100, paced open-loop (each key sends on a fixed schedule, up to BENCH_BURST_IN_FLIGHT, 50,
// requests in flight; a request whose turn comes while that many are waiting is counted as not sent, so the offered rate is
// what the client managed, printed). Every answer must be 201 or 429 (with Retry-After), none 5xx
// and no connection dropped; afterwards every event a 201 acknowledged is stored, nothing else is
// (the project holds exactly the acknowledged events), and verify answers ok. The runtime's memory
// (RSS of the workerd process holding the Worker, its Durable Objects, D1 and R2) is sampled
// throughout: the ledger's queue is bounded (src/chain/ingest-admission.ts), so it must level off.
import { readFileSync } from "node:fs";
import http from "node:http";
import { projectShard, storedEvents } from "./archive-helpers.mjs";
import { createKey, fmt, percentile, sampleEvent, sampleRss } from "./lib.mjs";

const RATE = Number(process.env.BENCH_BURST_RATE ?? 20_000);
const KEYS = Number(process.env.BENCH_BURST_KEYS ?? 20);
const SECONDS = Number(process.env.BENCH_BURST_SECONDS ?? 30);
const BATCH = 100;
const IN_FLIGHT = Number(process.env.BENCH_BURST_IN_FLIGHT ?? 50);

function post(agent, url, key, body) {
  return new Promise((resolve) => {
    const started = performance.now();
    const req = http.request(
      `${url}/v1/events/batch`,
      { method: "POST", agent, headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", "CF-Connecting-IP": "127.0.0.30" } },
      (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode, retryAfter: res.headers["retry-after"] ?? null, body: Buffer.concat(chunks).toString(), ms: performance.now() - started }));
        res.on("error", (e) => resolve({ status: 0, error: String(e), ms: performance.now() - started }));
      },
    );
    req.on("error", (e) => resolve({ status: 0, error: String(e), ms: performance.now() - started }));
    req.end(body);
  });
}

function getJson(url, key) {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers: { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "127.0.0.31" } }, (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode, json: JSON.parse(Buffer.concat(chunks).toString() || "null") }));
      })
      .on("error", reject);
  });
}

/** A process's resident memory now, in MiB. */
function rssNow(pid) {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024;
}

export default async function burstBench(ctx) {
  const { url, persistDir, report } = ctx;
  const projectId = `bench-burst-${Date.now()}`;
  const keys = Array.from({ length: KEYS }, () => createKey(persistDir, projectId));
  const interval = (1000 * BATCH * KEYS) / RATE;
  console.log(`\nBurst: ${RATE.toLocaleString("en-US")} events/s from ${KEYS} keys of ${projectId} for ${SECONDS} s (a batch of ${BATCH} per key every ${interval.toFixed(0)} ms)...`);

  const runtime = ctx.processes().runtime;
  const idle = rssNow(runtime);
  const rss = sampleRss(runtime);
  const timeline = [];
  const memory = setInterval(() => timeline.push(rssNow(runtime)), 5000);

  const answers = [];
  let notSent = 0;
  let seq = 0;
  const started = performance.now();
  await Promise.all(
    keys.map(async (key, k) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
      const pending = new Set();
      try {
        for (let turn = 0; ; turn++) {
          const due = started + k * (interval / KEYS) + turn * interval;
          if (due - started >= SECONDS * 1000) break;
          const wait = due - performance.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          if (pending.size >= IN_FLIGHT) {
            notSent++;
            continue;
          }
          const events = Array.from({ length: BATCH }, () => sampleEvent(seq++));
          const p = post(agent, url, key, JSON.stringify({ events })).then((a) => {
            pending.delete(p);
            answers.push(a);
          });
          pending.add(p);
        }
        await Promise.all(pending);
      } finally {
        agent.destroy();
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  clearInterval(memory);
  const peak = rss.stop();

  const by = (test) => answers.filter(test);
  const created = by((a) => a.status === 201);
  const refused = by((a) => a.status === 429);
  const withoutRetryAfter = refused.filter((a) => !a.retryAfter);
  const reasons = {};
  for (const a of refused) {
    const reason = JSON.parse(a.body)?.error?.details?.reason ?? "(none)";
    reasons[reason] = (reasons[reason] ?? 0) + 1;
  }
  const failed = by((a) => a.status !== 201 && a.status !== 429);
  const acknowledged = created.reduce((n, a) => n + JSON.parse(a.body).data.length, 0);
  const ids = new Set(created.flatMap((a) => JSON.parse(a.body).data.map((e) => e.id)));

  // Let the ledger's queue drain and its outbox settle, then count what is stored.
  await new Promise((r) => setTimeout(r, 5000));
  const { bench: stored } = storedEvents(persistDir, projectShard(persistDir, projectId), projectId);
  const verify = await getJson(`${url}/v1/events/verify`, keys[0]);
  const latency = created.map((a) => a.ms).sort((a, b) => a - b);

  report(`Burst (issue 38): ${fmt.rate(RATE, "events/s")} offered from ${KEYS} keys for ${SECONDS} s`, [
    [`requests sent / not sent (${IN_FLIGHT} in flight per key)`, `${answers.length} / ${notSent}: offered ${fmt.rate((answers.length * BATCH) / seconds, "events/s")}`],
    ["answers 201 / 429 / other", `${created.length} / ${refused.length} / ${failed.length}${failed.length ? ` (${[...new Set(failed.map((a) => a.status))].join(", ")}: ${failed[0].error ?? failed[0].body.slice(0, 200)})` : ""}`],
    ["429 reasons", Object.entries(reasons).map(([r, n]) => `${r} ${n}`).join(", ") || "none"],
    ["429 without Retry-After", String(withoutRetryAfter.length)],
    ["accepted", `${fmt.rate(acknowledged / seconds, "events/s")} (${acknowledged.toLocaleString("en-US")} events, ${ids.size.toLocaleString("en-US")} distinct ids)`],
    ["201 latency p50 / p95 / max", `${percentile(latency, 50)?.toFixed(0)} / ${percentile(latency, 95)?.toFixed(0)} / ${latency.at(-1)?.toFixed(0)} ms`],
    ["stored afterwards vs acknowledged", `${stored.toLocaleString("en-US")} vs ${acknowledged.toLocaleString("en-US")}: ${stored === acknowledged ? "nothing lost, nothing extra" : "MISMATCH"}`],
    ["verify", `${verify.status} ok=${verify.json?.data?.ok} verified=${verify.json?.data?.verified}`],
    ["runtime RSS idle / every 5 s / peak", `${idle.toFixed(0)} / ${timeline.map((m) => m.toFixed(0)).join(", ")} / ${peak.toFixed(0)} MiB`],
  ]);
  if (failed.length > 0 || withoutRetryAfter.length > 0 || stored !== acknowledged || ids.size !== acknowledged || verify.json?.data?.ok !== true) {
    throw new Error("burst: an answer other than 201/429, a 429 without Retry-After, a lost or extra event, or a failed verify (see above)");
  }
}
