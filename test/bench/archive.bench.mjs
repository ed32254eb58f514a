// Issue 14 benchmark: a project with most of its events in the cold archive (R2) and the rest hot (D1).
// BENCH_ARCHIVE_EVENTS (default 1,000,000) events in bench-tiered: the first 90% loaded, archived by the
// daily cron (hot window 0 days), then the window switched off and the last 10% loaded, hot. Then:
// exports of each tier, verify over both, list on the hot part, D1 bytes per hot event, and the cron's pace.
// Counts are of the bench's own events: the cron also records each bench key in the chain
// (witness.key.created, archived with the rest), which verify covers and the tiers' exports leave out.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { quote, sql } from "../../src/scripts/lib.mjs";
import { archiveReads } from "./archive-reads.mjs";
import { COLD_YEAR, HOT_YEAR, d1FileOf, d1Pages, growth, projectShard, runCron, tierCounts, tieredEvent } from "./archive-helpers.mjs";
import { batchLoad, createKey, fmt, sampleEvent } from "./lib.mjs";

const PROJECT = "bench-tiered";
const MAX_CRON_RUNS = 50;

function setTiering(persistDir, days) {
  sql(`UPDATE projects SET hot_days = ${days === null ? "NULL" : days} WHERE id = ${quote(PROJECT)}`, { persistTo: persistDir });
}

/** Loads, archives and loads again as far as the project still needs; a complete project is reused as it is. */
async function prepare({ url, persistDir, total, cold, report }) {
  const key = createKey(persistDir, PROJECT);
  const shard = projectShard(persistDir, PROJECT);
  const stateFile = join(persistDir, "bench-archive.json");
  const at = () => tierCounts(persistDir, shard, PROJECT);
  let counts = at();
  // A load cut off part-way is finished on the next run: only the tier of an event depends on its index.
  if (counts.archived === 0 && counts.hot < cold) {
    const from = counts.hot;
    console.log(`\nLoading ${(cold - from).toLocaleString("en-US")} events of ${PROJECT} that will be archived...`);
    const load = await batchLoad({ url, key, total: cold - from, makeEvent: (i) => tieredEvent(from + i, cold) });
    report("Archive bench: load of the part to archive", [["batch ingest", `${fmt.rate(load.perSecond, "events/s")} (${load.seconds.toFixed(0)} s)`]]);
    counts = at();
  }
  if (counts.archived < cold) {
    if (counts.hot + counts.archived !== cold) throw new Error(`${PROJECT} holds ${counts.hot} hot + ${counts.archived} archived events, expected ${cold} before archiving: use another BENCH_DATA`);
    // 0 days: everything received before the cron's run is due. The cron seals a bounded number of segments a run.
    setTiering(persistDir, 0);
    const from = counts.archived;
    let seconds = 0;
    let runs = 0;
    while (counts.archived < cold) {
      if (++runs > MAX_CRON_RUNS) throw new Error(`the archive did not catch up in ${MAX_CRON_RUNS} cron runs (${counts.archived} of ${cold})`);
      const before = counts.archived;
      const started = performance.now();
      await runCron(url);
      seconds += (performance.now() - started) / 1000;
      counts = at();
      console.log(`  cron run ${runs}: ${counts.archived.toLocaleString("en-US")} of ${cold.toLocaleString("en-US")} archived`);
      if (counts.archived === before) throw new Error(`a cron run archived nothing (${counts.archived} of ${cold}): see the service's log`);
    }
    if (counts.archived !== cold || counts.hot !== 0) throw new Error(`after archiving: ${counts.hot} hot + ${counts.archived} archived, expected 0 + ${cold}`);
    const archived = counts.archived - from;
    writeFileSync(stateFile, JSON.stringify({ archived, seconds, runs, at: new Date().toISOString() }));
  }
  // Off: the hot part stays hot whatever the cron does later.
  setTiering(persistDir, null);
  if (counts.archived === cold && counts.hot < total - cold) {
    const from = cold + counts.hot;
    console.log(`Loading the last ${(total - from).toLocaleString("en-US")} events of ${PROJECT}, kept hot...`);
    await batchLoad({ url, key, total: total - from, makeEvent: (i) => tieredEvent(from + i, cold) });
    counts = at();
  }
  if (counts.archived !== cold || counts.hot !== total - cold) {
    throw new Error(`${PROJECT} holds ${counts.hot} hot + ${counts.archived} archived events, expected ${total - cold} + ${cold}: use another BENCH_DATA`);
  }
  const cron = existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, "utf8")) : null;
  return { key, shard, counts, cron };
}

/**
 * D1 bytes per hot event: dbstat of the shard's file before and after a load of
 * BENCH_BYTES_EVENTS sampleEvent()s into bench-bytes (a fresh project on the
 * first run; later runs append as many again and measure that growth).
 */
async function bytesPerEvent({ url, persistDir, report }) {
  const n = Number(process.env.BENCH_BYTES_EVENTS ?? 50_000);
  const projectId = "bench-bytes";
  const key = createKey(persistDir, projectId);
  const before = d1Pages(persistDir);
  await batchLoad({ url, key, total: n, makeEvent: sampleEvent });
  const g = growth(before, d1Pages(persistDir), d1FileOf(persistDir, projectId));
  const per = (bytes) => `${Math.round(bytes / n).toLocaleString("en-US")} bytes/event`;
  const indexes = Object.entries(g.indexes).sort((a, b) => b[1] - a[1]);
  const indexTotal = indexes.reduce((s, [, v]) => s + v, 0);
  report(`D1 bytes per hot event (dbstat growth of the shard over ${n.toLocaleString("en-US")} sampleEvent()s into ${projectId})`, [
    ["total", per(g.total)],
    ["events table", per(g.table)],
    ["search index (FTS5 and its shadow tables)", per(g.fts)],
    [`${indexes.length} indexes of events`, per(indexTotal)],
    ...indexes.map(([name, v]) => [`  ${name}`, per(v)]),
    ...Object.entries(g.other).map(([name, v]) => [`other: ${name}`, per(v)]),
  ]);
  return g.total / n;
}

export default async function archiveBench(ctx) {
  const total = Number(process.env.BENCH_ARCHIVE_EVENTS ?? 1_000_000);
  const cold = Math.round(total * 0.9);
  const { persistDir, report } = ctx;
  const { key, counts, cron } = await prepare({ ...ctx, total, cold });
  report(`Archive (${PROJECT}: ${counts.archived.toLocaleString("en-US")} archived in ${counts.segments} segments, ${counts.hot.toLocaleString("en-US")} hot)`, [
    [
      "daily cron, archiving (whole /__scheduled runs)",
      cron
        ? `${fmt.rate(cron.archived / cron.seconds, "events/s")} (${cron.archived.toLocaleString("en-US")} events in ${cron.runs} runs, ${cron.seconds.toFixed(1)} s; measured ${cron.at})`
        : "not measured (archived before bench-archive.json was kept)",
    ],
    ["R2 per archived event, sealed segments (gzip JSON lines)", `${(counts.bytes / counts.archived).toFixed(0)} bytes`],
    [
      "R2 per archived event, export companions (CSV + JSON)",
      counts.with_companions > 0
        ? `${((counts.csv + counts.json) / counts.archived).toFixed(0)} bytes (${counts.with_companions} of ${counts.segments} segments have them)`
        : "none (sealed without companions)",
    ],
  ]);
  await archiveReads({ ...ctx, key, total, cold, witness: counts.witness, coldYear: COLD_YEAR, hotYear: HOT_YEAR });
  await bytesPerEvent({ ...ctx, persistDir });
}
