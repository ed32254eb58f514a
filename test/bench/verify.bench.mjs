// Issue 4 benchmark: GET /v1/events/verify over the whole large project, against
// a loop that only computes SHA-256 + HMAC per event in the same runtime.
import { request } from "node:http";
import { fmt, readTimes, sampleHeap, sampleRss } from "./lib.mjs";

/** node:http rather than fetch: a long verify answers only at the end, past fetch's header timeout. */
function getJson(url, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => (body += chunk));
      res.on("end", () => (res.statusCode === 200 ? resolve(JSON.parse(body)) : reject(new Error(`${url} answered ${res.statusCode}: ${body.slice(0, 300)}`))));
    });
    req.on("error", reject);
    req.end();
  });
}

async function timed(fn) {
  const started = performance.now();
  const value = await fn();
  return { value, seconds: (performance.now() - started) / 1000 };
}

export default async function verifyBench({ url, key, projectId, total, witness, processes, inspectorPort, baselineUrl, report, layout }) {
  const headers = { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "127.0.0.4" };
  // The baseline hashes as many events as verify checks: runs of the same length see the same machine.
  const n = total;

  // Warm both up (JIT, key import, D1 connection), the worker on a small window.
  await getJson(`${baselineUrl}/crypto-loop?n=${Math.min(n, 20_000)}`);
  await getJson(`${url}/v1/events/verify?to=${readTimes(layout).warm}`, headers);
  const worker = processes().runtime;
  const before = sampleRss(worker).stop();
  const during = sampleRss(worker);
  const heap = await sampleHeap(inspectorPort);
  // Best of three for both, in alternating rounds: the same statistic on both
  // sides of the ratio, taken while the shared machine runs at the same speed.
  let baseline = 0;
  let seconds = Infinity;
  for (let i = 0; i < 3; i++) {
    const loop = await timed(() => getJson(`${baselineUrl}/crypto-loop?n=${n}`));
    baseline = Math.max(baseline, n / loop.seconds);
    const run = await timed(() => getJson(`${url}/v1/events/verify`, headers));
    const result = run.value.data;
    // The whole chain: the bench's events and the cron's witness.key.created records of its keys (run.mjs).
    if (!result.ok || result.verified !== total + witness) {
      throw new Error(`verify of ${projectId} did not pass cleanly: ${JSON.stringify(result)}`);
    }
    seconds = Math.min(seconds, run.seconds);
  }
  const peak = during.stop();
  const heapPeak = await heap.stop();
  const rate = total / seconds;

  report(`Verify (${total.toLocaleString("en-US")} events, one request, wrangler dev)`, [
    ["baseline: SHA-256 + HMAC + leaf hash loop", fmt.rate(baseline, "events/s")],
    ["GET /v1/events/verify", `${fmt.rate(rate, "events/s")} (${fmt.pct(rate / baseline)} of baseline; target >= 50%), best of 3: ${seconds.toFixed(1)} s`],
    ["Worker heap before / peak over the three", `${heap.beforeMiB.toFixed(0)} MiB / ${heapPeak.toFixed(0)} MiB (+${(heapPeak - heap.beforeMiB).toFixed(0)} MiB)`],
    ["workerd RSS before / peak over the three", `${before.toFixed(0)} MiB / ${peak.toFixed(0)} MiB (+${(peak - before).toFixed(0)} MiB)`],
  ]);
}
