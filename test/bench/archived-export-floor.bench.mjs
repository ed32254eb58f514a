// Issue 21's export floor for archived rows: with Witness stopped, the baseline worker's
// /archived-export-floor (baseline/archived-export-floor.ts) reads the jobs bench's project's sealed
// segments from Witness's own local D1 and R2 (the same --persist-to) and writes them back as
// 20,000-row files, with no Witness job code: a ceiling for the export job's archived part.
// Two walks, the first (cold runtime, cold files) not counted.
import { projectShard } from "./archive-helpers.mjs";
import { floorConfigDir } from "./export-floor.bench.mjs";
import { fmt, httpGet, startWorker } from "./lib.mjs";

export default async function archivedExportFloorBench({ persistDir, projectId, cold, jobRate, port, report }) {
  const floor = await startWorker({ port, configDir: floorConfigDir(projectShard(persistDir, projectId)), persistDir });
  try {
    const base = await floor.runtimeUrl();
    let best = 0;
    let answer = null;
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      const res = await httpGet(`${base}/archived-export-floor?project=${projectId}&part_rows=20000`);
      if (res.status !== 200) throw new Error(`archived export floor answered ${res.status}: ${String(res.body).slice(0, 300)}`);
      answer = JSON.parse(res.body);
      // Every archived event of the project, the bench's and any witness.* records the cron archived with them.
      if (answer.rows < cold) throw new Error(`archived export floor read ${answer.rows} rows, fewer than the ${cold} archived`);
      if (i > 0) best = Math.max(best, answer.rows / ((performance.now() - started) / 1000));
    }
    report(`Archived-export floor: the runtime alone, ${answer.rows.toLocaleString("en-US")} archived rows in ${answer.segments} segments, no Witness job code (ceiling), best of 2`, [
      ["read, check, unpack and parse every segment; write 20,000-row files to R2", fmt.rate(best, "rows/s")],
      ["the export job's archived part (measured before, with the service running)", `${fmt.rate(jobRate, "rows/s")}: ${fmt.pct(jobRate / best)} of the floor`],
    ]);
  } finally {
    await floor.stop();
  }
}
