// The jobs bench's project (jobs.bench.mjs): BENCH_JOB_EVENTS events in bench-jobs, the first 90%
// archived by the service itself while they arrive, the rest hot. Loaded once per BENCH_DATA.
//
// Why this route is honest: every event goes through POST /v1/events/batch (validation, chain
// hashes, HMAC signatures, the transparency log's leaves and tiles, D1 inserts) and every archived
// segment is sealed by the ledger's own alarm (src/storage/archive-upkeep.ts, archiveStep under the
// commit lock, companions, id index), exactly as in production with a hot window of 0 days. Nothing
// is written around the service. It is also the fastest route that keeps that property: the batches
// go to the runtime's own socket (no dev proxy hop), several in flight, and archiving runs while
// ingest goes on instead of after it (in production they are separate invocations too).
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { quote, sql } from "../../src/scripts/lib.mjs";
import { benchLayout, tierCounts, tieredEvent, projectShard } from "./archive-helpers.mjs";
import { batchLoad, createKey, fmt } from "./lib.mjs";

export const PROJECT = "bench-jobs";
/** Rows per sealed segment (src/storage/archive-run.ts SEGMENT_ROWS): the alarm seals whole ones only. */
const SEGMENT_ROWS = 2000;
const ARCHIVE_WAIT_MS = 30 * 60_000;

function setHotDays(persistDir, days) {
  sql(`UPDATE projects SET hot_days = ${days === null ? "NULL" : days} WHERE id = ${quote(PROJECT)}`, { persistTo: persistDir });
}

/**
 * The project's rows as stored, read with Node's SQLite beside the running service (read-only,
 * cheap enough to poll; `wrangler d1 execute` costs a second of CPU a call): hot rows of every
 * action, and archived events (the sum of the segments' counts). Together: every event in the chain.
 */
export function storedNow(persistDir) {
  const dir = join(persistDir, "v3", "d1", "miniflare-D1DatabaseObject");
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite")) {
    const db = new DatabaseSync(join(dir, file), { readOnly: true });
    try {
      if (!db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'archive_segments'").get()) continue;
      const hot = db.prepare("SELECT count(*) AS n FROM events WHERE project_id = ?").get(PROJECT).n;
      const seg = db.prepare("SELECT coalesce(sum(count), 0) AS n, count(*) AS segments FROM archive_segments WHERE project_id = ?").get(PROJECT);
      if (hot + seg.n > 0) return { hot, archived: seg.n, segments: seg.segments, all: hot + seg.n };
    } finally {
      db.close();
    }
  }
  return { hot: 0, archived: 0, segments: 0, all: 0 };
}

/** Loads what bench-jobs still lacks (a cut-off load of the archived part resumes); returns its key and the load's figures. */
export async function prepareJobsProject({ runtimeUrl, persistDir, total, report }) {
  const cold = Math.round(total * 0.9);
  const key = createKey(persistDir, PROJECT);
  const stateFile = join(persistDir, "bench-jobs.json");
  const layout = benchLayout();
  const state = existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, "utf8")) : { total, cold, layout };
  if (state.total !== total) throw new Error(`${persistDir} holds bench-jobs loaded with ${state.total} events, not ${total}: use another BENCH_DATA or BENCH_JOB_EVENTS=${state.total}`);
  // Data loaded before the knob existed is scattered.
  if ((state.layout ?? "scattered") !== layout) throw new Error(`${persistDir} holds bench-jobs in the ${state.layout ?? "scattered"} layout, not ${layout}: use another BENCH_DATA or BENCH_LAYOUT=${state.layout ?? "scattered"}`);
  const save = () => writeFileSync(stateFile, JSON.stringify(state));
  const live = { live: layout === "live", total };
  const load = (n, from) => batchLoad({ url: runtimeUrl, key, total: n, concurrency: 8, makeEvent: (i) => tieredEvent(from + i, cold, live), ip: "127.0.0.21" });

  if (!state.coldLoaded) {
    // The bench's own events so far (tierCounts leaves out the cron's witness.key.created records, if any ran).
    const counts = tierCounts(persistDir, projectShard(persistDir, PROJECT), PROJECT);
    const from = counts.hot + counts.archived;
    if (from > cold) throw new Error(`bench-jobs holds ${from} events before its archived part (${cold}) was complete: use another BENCH_DATA`);
    setHotDays(persistDir, 0);
    console.log(`\nLoading ${(cold - from).toLocaleString("en-US")} events of ${PROJECT} (of ${total.toLocaleString("en-US")}), archived by the ledger's alarm as they arrive...`);
    const timer = setInterval(() => {
      const s = storedNow(persistDir);
      console.log(`  ${s.all.toLocaleString("en-US")} stored: ${s.archived.toLocaleString("en-US")} archived in ${s.segments} segments, ${s.hot.toLocaleString("en-US")} hot`);
    }, 60_000);
    try {
      const run = await load(cold - from, from);
      state.coldLoad = { events: cold - from, seconds: run.seconds, at: new Date().toISOString() };
    } finally {
      clearInterval(timer);
    }
    state.coldLoaded = true;
    save();
  }
  if (!state.archived) {
    // The alarm seals whole segments of due rows; the last partial one stays hot (a day-old part would go too).
    const started = performance.now();
    let s = storedNow(persistDir);
    while (s.hot >= SEGMENT_ROWS) {
      if (performance.now() - started > ARCHIVE_WAIT_MS) throw new Error(`archiving did not catch up in ${ARCHIVE_WAIT_MS / 60_000} min: ${s.hot} hot rows left`);
      await new Promise((r) => setTimeout(r, 2000));
      s = storedNow(persistDir);
    }
    setHotDays(persistDir, null);
    state.archiveTail = { seconds: (performance.now() - started) / 1000, archived: s.archived, hot: s.hot };
    state.archived = true;
    save();
  }
  if (!state.hotLoaded) {
    // Off: the hot part stays hot. The bench's own events only (increments of earlier runs come after this).
    const counts = tierCounts(persistDir, projectShard(persistDir, PROJECT), PROJECT);
    const from = counts.hot + counts.archived;
    console.log(`Loading the last ${(total - from).toLocaleString("en-US")} events of ${PROJECT}, kept hot...`);
    const run = await load(total - from, from);
    state.hotLoad = { events: total - from, seconds: run.seconds };
    state.hotLoaded = true;
    save();
  }
  const { coldLoad, archiveTail, hotLoad } = state;
  if (coldLoad) {
    report(`Jobs bench: load of ${PROJECT} (${total.toLocaleString("en-US")} events, ${layout} layout, once per BENCH_DATA)`, [
      [`batch ingest of the part to archive, the ledger's alarm sealing meanwhile (${coldLoad.at})`, `${fmt.rate(coldLoad.events / coldLoad.seconds, "events/s")} (${coldLoad.events.toLocaleString("en-US")} in ${coldLoad.seconds.toFixed(0)} s)`],
      ["archive caught up after the load", archiveTail ? `${archiveTail.seconds.toFixed(0)} s later (${archiveTail.hot} rows left hot: the last partial segment)` : "?"],
      ["batch ingest of the hot part", hotLoad ? `${fmt.rate(hotLoad.events / hotLoad.seconds, "events/s")} (${hotLoad.events.toLocaleString("en-US")})` : "?"],
    ]);
  }
  return { key, cold, state };
}
