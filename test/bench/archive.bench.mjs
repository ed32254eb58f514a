// Issue 14 benchmark: a project with most of its events in the cold archive (R2) and the rest hot (D1).
// BENCH_ARCHIVE_EVENTS (default 1,000,000) events in bench-tiered: the first 90% loaded, archived by the
// ledger's alarms (hot window 0 days, woken by the daily cron), then the window switched off and the last
// 10% loaded, hot. Then: exports of each tier, verify over both, list on the hot part, D1 bytes per hot
// event, and the archive's pace against the batch ingest's, measured in the same run.
// Counts are of the bench's own events: the cron also records each bench key in the chain
// (witness.key.created, archived with the rest), which verify covers and the tiers' exports leave out.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { quote, sql } from "../../src/scripts/lib.mjs";
import { archiveReads } from "./archive-reads.mjs";
import { COLD_YEAR, HOT_YEAR, d1FileOf, d1Pages, growth, projectShard, runCron, tierCounts, tieredEvent } from "./archive-helpers.mjs";
import { batchLoad, createKey, fmt, sampleEvent } from "./lib.mjs";

const PROJECT = "bench-tiered";
/** Archiving that moves nothing for this long has stalled: see the service's log. */
const STALL_MS = 120_000;

function setTiering(persistDir, days, projectId = PROJECT) {
  sql(`UPDATE projects SET hot_days = ${days === null ? "NULL" : days} WHERE id = ${quote(projectId)}`, { persistTo: persistDir });
}

/**
 * Waits while the ledger's alarms archive (the daily cron only wakes it), polling `archived()`
 * until it reaches `target`; the seconds from the wake-up to the last segment.
 */
async function archiveAndTime({ url, archived, target, label }) {
  const started = performance.now();
  await runCron(url);
  let last = archived();
  let moved = performance.now();
  while (last < target) {
    await new Promise((r) => setTimeout(r, 250));
    const now = archived();
    if (now > last) {
      if (Math.floor(now / 100_000) > Math.floor(last / 100_000)) console.log(`  ${label}: ${now.toLocaleString("en-US")} of ${target.toLocaleString("en-US")} archived`);
      [last, moved] = [now, performance.now()];
    } else if (performance.now() - moved > STALL_MS) {
      throw new Error(`${label}: archiving stalled at ${now} of ${target} for ${STALL_MS / 1000} s: see the service's log`);
    }
  }
  return (performance.now() - started) / 1000;
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
    // 0 days: everything received so far is due; the daily cron wakes the ledger, whose alarms archive it in bounded steps.
    setTiering(persistDir, 0);
    const from = counts.archived;
    // Stored counts (the cron's witness.key.created records included), read directly: tierCounts goes through wrangler.
    const file = d1FileOf(persistDir, PROJECT);
    const stored = archivedCount(persistDir, file, PROJECT) + hotCount(persistDir, file, PROJECT);
    const seconds = await archiveAndTime({ url, archived: () => archivedCount(persistDir, file, PROJECT), target: stored, label: PROJECT });
    counts = at();
    if (counts.archived !== cold || counts.hot !== 0) throw new Error(`after archiving: ${counts.hot} hot + ${counts.archived} archived, expected 0 + ${cold}`);
    const archived = counts.archived - from;
    writeFileSync(stateFile, JSON.stringify({ archived, seconds, alarms: true, at: new Date().toISOString() }));
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

/** One number from a project's local D1 file, read-only beside the running service (wrangler would take seconds a poll). */
function localCount(persistDir, file, query, projectId) {
  const db = new DatabaseSync(join(persistDir, "v3", "d1", "miniflare-D1DatabaseObject", file), { readOnly: true });
  try {
    return db.prepare(query).get(projectId).n;
  } finally {
    db.close();
  }
}
const hotCount = (persistDir, file, projectId) => localCount(persistDir, file, "SELECT count(*) AS n FROM events WHERE project_id = ?", projectId);
const archivedCount = (persistDir, file, projectId) => localCount(persistDir, file, "SELECT coalesce(sum(count), 0) AS n FROM archive_segments WHERE project_id = ?", projectId);

/**
 * D1 bytes per hot event: dbstat of the shard's file before and after a load of
 * BENCH_BYTES_EVENTS sampleEvent()s into bench-bytes (a fresh project on the
 * first run; later runs append as many again and measure that growth). Then
 * the same events archived (hot window 0, the cron's wake-up, the ledger's
 * alarms): the archive's pace against that load's, and the D1 bytes an
 * archived event still takes (its id index entry, its share of a segment row).
 */
async function bytesPerEvent({ url, persistDir, report }) {
  const n = Number(process.env.BENCH_BYTES_EVENTS ?? 50_000);
  const projectId = "bench-bytes";
  const key = createKey(persistDir, projectId);
  setTiering(persistDir, null, projectId);
  const before = d1Pages(persistDir);
  const load = await batchLoad({ url, key, total: n, makeEvent: sampleEvent });
  const file = d1FileOf(persistDir, projectId);
  const g = growth(before, d1Pages(persistDir), file);
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

  // The cron records the bench key in the chain (witness.key.created) on its first run: one event more to archive, at most.
  setTiering(persistDir, 0, projectId);
  const seconds = await archiveAndTime({ url, archived: () => n - Math.min(n, hotCount(persistDir, file, projectId)), target: n, label: projectId });
  await new Promise((r) => setTimeout(r, 1000));
  const left = hotCount(persistDir, file, projectId);
  if (left !== 0) throw new Error(`${projectId}: ${left} events still hot after archiving`);
  setTiering(persistDir, null, projectId);
  const archivedGrowth = growth(before, d1Pages(persistDir), file);
  const pace = n / seconds;
  report(`Archive pace against ingest pace (${n.toLocaleString("en-US")} events of ${projectId}, the same run)`, [
    ["batch ingest (100/request, 6 in flight)", fmt.rate(load.perSecond, "events/s")],
    ["archiving from the ledger's alarms, from the cron's wake-up to the last segment", `${fmt.rate(pace, "events/s")} (${seconds.toFixed(1)} s)`],
    ["archive pace as a multiple of ingest pace", `${(pace / load.perSecond).toFixed(2)}x (target >= 1x: the archive keeps up)`],
    ["D1 bytes per event once archived (id index, segment rows)", per(archivedGrowth.total)],
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
      cron?.alarms ? "archiving from the ledger's alarms (from the cron's wake-up)" : "daily cron, archiving (whole /__scheduled runs)",
      cron
        ? `${fmt.rate(cron.archived / cron.seconds, "events/s")} (${cron.archived.toLocaleString("en-US")} events in ${cron.seconds.toFixed(1)} s${cron.runs ? `, ${cron.runs} runs` : ""}; measured ${cron.at})`
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
