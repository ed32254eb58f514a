// Issue 3's export ceiling, part by part: the baseline worker's /export-floor reads the large
// project's export pages from Witness's own local D1 (the same --persist-to, once Witness has
// stopped), or sends (and stages in R2) one page's bytes as often as the project has pages.
// No Witness code runs; each figure is an upper bound for an export. Timed at the runtime.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { shardBindings } from "../../src/scripts/lib.mjs";
import { projectShard } from "./archive-helpers.mjs";
import { countLines, fmt, ROOT, startWorker, tempDir } from "./lib.mjs";

const STEPS = [
  ["read", "read the export's D1 pages (a line feed per row sent)"],
  ["send", "send the export's bytes (no D1)"],
  ["stage", "stage them in R2 and send them (no D1)"],
];

/**
 * The baseline's config with its DB bound to the shard that holds the project,
 * so the floor reads the project's own pages wherever placement put it.
 */
export function floorConfigDir(shard) {
  const baseline = join(ROOT, "test", "bench", "baseline");
  const dir = join(tempDir("export-floor"), "config");
  mkdirSync(dir, { recursive: true });
  const db = shardBindings().get(shard);
  if (!db?.id) throw new Error(`wrangler.toml binds no shard ${shard} with a database id`);
  const toml = readFileSync(join(baseline, "wrangler.toml"), "utf8")
    .replace(/^main = "worker.ts"$/m, `main = ${JSON.stringify(join(baseline, "worker.ts"))}`)
    .replace(/^directory = "([^"]+)"$/m, (_, d) => `directory = ${JSON.stringify(join(baseline, d))}`)
    .replace(/^(binding = "DB"\ndatabase_name = )"[^"]+"\ndatabase_id = "[^"]+"$/m, `$1"${db.name}"\ndatabase_id = "${db.id}"`);
  if (!toml.includes(db.id)) throw new Error("the baseline's wrangler.toml no longer has the DB binding the export floor rewrites");
  writeFileSync(join(dir, "wrangler.toml"), toml);
  return dir;
}

export default async function exportFloorBench({ persistDir, total, report, projectId = "bench-large" }) {
  const floor = await startWorker({ port: 8872, configDir: floorConfigDir(projectShard(persistDir, projectId)), persistDir });
  try {
    const base = await floor.runtimeUrl();
    const rows = [];
    // The first walk after a start pays for a cold runtime and cold pages; it is not counted.
    for (const [to, label] of [["read", null], ...STEPS]) {
      const started = performance.now();
      const res = await fetch(`${base}/export-floor?to=${to}&rows=${total}`);
      if (res.status !== 200) throw new Error(`export floor answered ${res.status}: ${await res.text()}`);
      // A line per row; "send" and "stage" send whole copies of a page, so the last may run past total.
      const { lines } = await countLines(res.body);
      const seconds = (performance.now() - started) / 1000;
      if (to === "read" ? lines !== total : lines < total) throw new Error(`export floor (${to}) saw ${lines} rows for ${total}`);
      if (label) rows.push([label, `${fmt.rate(lines / seconds, "rows/s")} (${seconds.toFixed(1)} s)`]);
    }
    report(`Export floor: the runtime alone, ${total.toLocaleString("en-US")} rows, no Witness code (ceiling)`, rows);
    const cleared = await fetch(`${base}/staged-exports/delete`, { method: "POST" });
    if (!cleared.ok) throw new Error(`deleting staged exports answered ${cleared.status}`);
    console.log(`(deleted ${(await cleared.json()).deleted} staged export objects of the read bench from ${persistDir})`);
  } finally {
    await floor.stop();
  }
}
