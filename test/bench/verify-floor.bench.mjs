// Issue 21's verify floor: with Witness stopped, the baseline worker's /verify-floor
// (baseline/verify-floor.ts) reads every row of the jobs bench's project as a verify must (segments
// from Witness's own local R2, checked and unpacked; hot rows from its D1) and runs the crypto loop's
// work on each, then again with the commitment digest verify makes of every salted row and the loop
// leaves out: what the verify job cannot go below on one core. The ratio is the job against
// the loop alone; this says how much of that the reading and the fourth digest leave. A 50-segment
// warm-up walk, then the two timed ones.
import { projectShard } from "./archive-helpers.mjs";
import { floorConfigDir } from "./export-floor.bench.mjs";
import { fmt, httpGet, startWorker } from "./lib.mjs";

export default async function verifyFloorBench({ persistDir, projectId, events, jobRate, loopRate, port, report }) {
  const floor = await startWorker({ port, configDir: floorConfigDir(projectShard(persistDir, projectId)), persistDir });
  try {
    const base = await floor.runtimeUrl();
    const rates = {};
    let answer = null;
    // A short walk first (JIT, key import, the first files), then the timed walks of every row:
    // the loop's three digests, then with the commitment digest verify also makes.
    for (const [name, query] of [["warm-up", "&segments=50"], ["loop", ""], ["all", "&commitments=1"]]) {
      const started = performance.now();
      const res = await httpGet(`${base}/verify-floor?project=${projectId}${query}`);
      if (res.status !== 200) throw new Error(`verify floor answered ${res.status}: ${String(res.body).slice(0, 300)}`);
      answer = JSON.parse(res.body);
      rates[name] = answer.rows / ((performance.now() - started) / 1000);
    }
    if (answer.rows < events) throw new Error(`verify floor read ${answer.rows} rows, fewer than the ${events} the job verified`);
    const vsLoop = (rate) => `${fmt.rate(rate, "events/s")}: ${fmt.pct(rate / loopRate)} of the loop alone (${fmt.rate(loopRate, "events/s")})`;
    report(`Verify floor: the runtime alone, ${answer.rows.toLocaleString("en-US")} rows (${answer.segments} segments and the hot rows), no Witness verify code (ceiling), after a 50-segment warm-up`, [
      ["read every row as verify must, then SHA-256 + HMAC + leaf hash on each (the loop's work)", vsLoop(rates.loop)],
      ["the same and the commitment digest of each salted row (what verify cannot skip)", vsLoop(rates.all)],
      ["the verify job (measured before, with the service running)", `${fmt.rate(jobRate, "events/s")}: ${fmt.pct(jobRate / rates.all)} of this floor, ${fmt.pct(jobRate / loopRate)} of the loop`],
    ]);
  } finally {
    await floor.stop();
  }
}
