// Issue 22 benchmark: reads across history. GET /v1/events and /v1/events/search merge the hot page
// with archived segments (src/reads/history-read.ts: at most 10 segments read a page, up to 400
// keyed Bloom summaries looked at to skip those that cannot match). Measured on the jobs bench's
// project (jobs-load.mjs: BENCH_JOB_EVENTS, 90% archived) and, in the same rounds, on a hot-only
// project of BENCH_HISTORY_HOT_EVENTS (bench-hot, tiering off): what the archive costs a read is the
// gap between the two. Then what each tier costs to store, and the archive's pace against ingest's.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { quote, sql } from "../../src/scripts/lib.mjs";
import { projectShard, storedEvents } from "./archive-helpers.mjs";
import { PROJECT, prepareJobsProject } from "./jobs-load.mjs";
import { batchLoad, createKey, fmt, httpGet, latencies, resetMeter } from "./lib.mjs";

const ITERATIONS = Number(process.env.BENCH_READ_ITERATIONS ?? 200);
const HOT = "bench-hot";
// The generator (sampleEvent, also under tieredEvent's dates) has 5,000 actors, each in 1 event of 5,000
// all through history: none is rarer. user_42's events sit in 2 segments of 5 (2,000 consecutive events
// hold 2,000 of the 5,000 actors), so its summaries let 60% of the segments go unread.
const ACTOR = "user_42";
// Every 10,000th event is "security.key.rotated" by "Zebulon <i>": `zebulon` is in 1 event of 10,000,
// archived ones included (1 segment in 5 holds one), and in no other field.
const TERM = "zebulon";
// Deep cursors at mid-history of each project: bench-jobs' archived part happened in 2025 (COLD_YEAR),
// bench-hot's events in the year from 2025-11-15 (sampleEvent); one instant for both would fall below
// all of bench-hot's events and answer an empty page.
const DEEP = { [PROJECT]: "2025-07-01T00:00:00.000Z", [HOT]: "2026-05-15T00:00:00.000Z" };
const TARGET = { list: 50, actor: 300, search: 500 };

/** bench-hot, once per BENCH_DATA (reused when complete): sampleEvent through the batch endpoint, as run.mjs loads bench-large. */
async function prepareHotProject({ runtimeUrl, persistDir, total, report }) {
  const key = createKey(persistDir, HOT);
  // Tiering off before any event: under the default window (30 days) the ledger's alarm would seal the year-old ones.
  sql(`UPDATE projects SET hot_days = NULL WHERE id = ${quote(HOT)}`, { persistTo: persistDir });
  const { bench } = storedEvents(persistDir, projectShard(persistDir, HOT), HOT);
  if (bench === total) console.log(`\nReusing the ${total.toLocaleString("en-US")} events of ${HOT} in ${persistDir}.`);
  else if (bench > 0) throw new Error(`${persistDir} holds ${bench} events of ${HOT}, not ${total}: use another BENCH_DATA or BENCH_HISTORY_HOT_EVENTS=${bench}`);
  else {
    console.log(`\nLoading ${total.toLocaleString("en-US")} events into ${HOT} (tiering off) through the batch endpoint...`);
    const run = await batchLoad({ url: runtimeUrl, key, total, concurrency: 8, ip: "127.0.0.23" });
    report(`History bench: load of ${HOT} (once per BENCH_DATA)`, [["batch ingest, hot only", `${fmt.rate(run.perSecond, "events/s")} (${run.seconds.toFixed(0)} s)`]]);
  }
  return key;
}

/** Runs fn on each SQLite file of a local store (v3/d1/..., v3/r2/...) that holds `table`, read-only beside the running service. */
function eachDb(persistDir, store, table, fn) {
  const dir = join(persistDir, "v3", store);
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite")) {
    const db = new DatabaseSync(join(dir, file), { readOnly: true });
    try {
      if (db.prepare("SELECT 1 FROM sqlite_master WHERE name = ?").get(table)) fn(db);
    } finally {
      db.close();
    }
  }
}
const D1 = "d1/miniflare-D1DatabaseObject";

/**
 * D1 bytes by what they serve, over every shard file: hot rows (events, their indexes, the search
 * index, event_targets), the archive's segment rows, its id index (archive_ids: a row per archived
 * event) and the summaries. Pages (what the file holds, half-empty ones included: the archiver's
 * deletes leave them in the time-ordered indexes) and payload (what the rows hold), from SQLite's
 * dbstat; where a SQLite lacks it, payload estimated from length() of each column (and said so).
 */
function d1Storage(persistDir) {
  const t = { hotRows: 0, archived: 0, free: 0, method: "SQLite's dbstat" };
  for (const k of ["hot", "segments", "ids", "summaries"]) t[k] = { pages: 0, payload: 0 };
  eachDb(persistDir, D1, "archive_summaries", (db) => {
    const owner = new Map(db.prepare("SELECT name, tbl_name FROM sqlite_master").all().map((r) => [r.name, r.tbl_name]));
    let btrees;
    try {
      btrees = db.prepare("SELECT name, sum(pgsize) AS pages, sum(payload) AS payload FROM dbstat GROUP BY name").all();
    } catch {
      t.method = "estimate, no dbstat here: sum(length(col)) of each table and index's columns, +9 B an index row; page slack not counted";
      btrees = estimatedBtrees(db, owner);
    }
    for (const { name, pages, payload } of btrees) {
      const table = owner.get(name) ?? name;
      const kind = { archive_summaries: "summaries", archive_segments: "segments", archive_ids: "ids" }[table] ?? (table.startsWith("events") || table === "event_targets" || table === "search_backlog" ? "hot" : null);
      if (kind) (t[kind].pages += pages), (t[kind].payload += payload);
    }
    // Free pages: the file keeps them (D1 bills the file's size) until new rows reuse them.
    t.free += db.prepare("PRAGMA freelist_count").get().freelist_count * db.prepare("PRAGMA page_size").get().page_size;
    t.hotRows += db.prepare("SELECT count(*) AS n FROM events").get().n;
    t.archived += db.prepare("SELECT coalesce(sum(count), 0) AS n FROM archive_segments").get().n;
  });
  return t;
}

function estimatedBtrees(db, owner) {
  const out = [];
  for (const [name, table] of owner) {
    const index = name !== table;
    const cols = db.prepare(`SELECT name FROM pragma_${index ? "index" : "table"}_info(?)`).all(name).map((c) => c.name).filter(Boolean);
    if (cols.length === 0) continue;
    try {
      const { b } = db.prepare(`SELECT coalesce(sum(${cols.map((c) => `coalesce(length("${c}"), 0)`).join(" + ")}${index ? " + 9" : ""}), 0) AS b FROM "${table}"`).get();
      out.push({ name, pages: b, payload: b });
    } catch {}
  }
  return out;
}

/**
 * R2 bytes of bench-jobs' archive: local R2 keeps each bucket's objects (key, size of its blob) in a
 * SQLite file under v3/r2/miniflare-R2BucketObject, the blobs under v3/r2/<bucket>/blobs. Segments end
 * .jsonl.gz, their export companions .csv.gz and .json.gz (src/storage/archive-segments.ts).
 */
function r2Storage(persistDir) {
  const t = { segments: 0, csv: 0, json: 0, objects: 0 };
  eachDb(persistDir, "r2/miniflare-R2BucketObject", "_mf_objects", (db) => {
    for (const r of db.prepare("SELECT key, size FROM _mf_objects WHERE key >= ? AND key < ?").all(`archive/${PROJECT}/`, `archive/${PROJECT}0`)) {
      t[r.key.endsWith(".csv.gz") ? "csv" : r.key.endsWith(".json.gz") ? "json" : "segments"] += r.size;
      t.objects++;
    }
  });
  return t;
}

export default async function historyBench({ url, runtimeUrl, baselineRuntimeUrl, persistDir, report }) {
  const total = Number(process.env.BENCH_JOB_EVENTS ?? 10_000_000);
  const hotTotal = Number(process.env.BENCH_HISTORY_HOT_EVENTS ?? 1_000_000);
  const { key: jobsKey, state } = await prepareJobsProject({ runtimeUrl, persistDir, total, report });
  const hotKey = await prepareHotProject({ runtimeUrl, persistDir, total: hotTotal, report });
  // run.mjs reports the meter after this bench: emptied here, it tells of the reads alone, not of a load this run made.
  await resetMeter(url);
  const headers = { [PROJECT]: jobsKey, [HOT]: hotKey };
  const get = async (p, path) => {
    const res = await httpGet(`${runtimeUrl}${path}`, { Authorization: `Bearer ${headers[p]}`, "CF-Connecting-IP": "127.0.0.24" });
    if (res.status !== 200) throw new Error(`${p}: GET ${path} answered ${res.status}: ${String(res.body).slice(0, 300)}`);
    return JSON.parse(res.body);
  };
  const cases = [
    ["first page, no filter", () => "/v1/events", TARGET.list],
    [`actor_id=${ACTOR} (1 in 5,000), first page`, () => `/v1/events?actor_id=${ACTOR}`, TARGET.actor],
    [`actor_id=${ACTOR}, deep cursor`, (p) => `/v1/events?actor_id=${ACTOR}&cursor=${DEEP[p]}`, TARGET.actor],
    [`search q=${TERM} (1 in 10,000), first page`, () => `/v1/events/search?q=${TERM}`, TARGET.search],
    [`search q=${TERM}, deep cursor`, (p) => `/v1/events/search?q=${TERM}&cursor=${DEEP[p]}`, TARGET.search],
  ];
  // What each page holds: one that ran out of its segment budget is short (even empty) with a nextCursor,
  // which must still lie below (older than) the cursor sent: a newer one would page backwards.
  const held = {};
  for (const [label, path] of cases) {
    for (const p of [PROJECT, HOT]) {
      const { data, nextCursor } = await get(p, path(p));
      const sent = new URLSearchParams(path(p).split("?")[1]).get("cursor");
      const next = !nextCursor ? "null" : sent && nextCursor.split("~")[0] > sent ? `${nextCursor}, NEWER than the cursor sent` : "set";
      held[label + p] = `${data.length} rows, nextCursor ${next}`;
    }
  }
  // A round sends every request once (both projects, and the no-op GET floor): a slow spell of this shared machine lands on all alike.
  const requests = [() => httpGet(`${baselineRuntimeUrl}/nothing`)];
  for (const [, path] of cases) for (const p of [PROJECT, HOT]) requests.push(() => get(p, path(p)));
  const [noop, ...timed] = await latencies(requests, ITERATIONS);
  const pct = (r) => `p50 ${fmt.ms(r.p50)} / p95 ${fmt.ms(r.p95)}`;
  const rows = [["baseline worker, no-op GET (floor)", pct(noop)]];
  cases.forEach(([label, , target], i) => {
    const [jobs, hot] = [timed[2 * i], timed[2 * i + 1]];
    rows.push([label, `target p95 < ${target} ms: ${jobs.p95 < target ? "met" : "MISSED"} on ${PROJECT}`]);
    rows.push([`  ${PROJECT} (${total.toLocaleString("en-US")}, 90% archived)`, `${pct(jobs)}   ${held[label + PROJECT]}`]);
    rows.push([`  ${HOT} (${hotTotal.toLocaleString("en-US")}, hot only)`, `${pct(hot)}   ${held[label + HOT]}`]);
  });
  report(`History reads, limit 50, at the runtime (${ITERATIONS} rounds; ${state.layout ?? "scattered"} layout; deep cursors ${DEEP[PROJECT]} on ${PROJECT}, ${DEEP[HOT]} on ${HOT})`, rows);

  const d1 = d1Storage(persistDir);
  const r2 = r2Storage(persistDir);
  const per = (bytes, n) => (n > 0 ? `${(bytes / n).toFixed(1)} B` : "-");
  const mib = (b) => `${(b / 2 ** 20).toFixed(1)} MiB`;
  const both = (part, n) => `${per(part.pages, n)} in pages (${mib(part.pages)}), ${per(part.payload, n)} of payload`;
  const archive = ["segments", "ids", "summaries"].reduce((s, k) => ({ pages: s.pages + d1[k].pages, payload: s.payload + d1[k].payload }), { pages: 0, payload: 0 });
  report(`Storage, local state of ${persistDir} (D1 by ${d1.method}; R2: object sizes in local R2's index)`, [
    [`D1 per hot event (${d1.hotRows.toLocaleString("en-US")} hot rows of every project: events, indexes, search index, event_targets)`, both(d1.hot, d1.hotRows)],
    [`D1 per archived event (${d1.archived.toLocaleString("en-US")}), summaries included`, both(archive, d1.archived)],
    ["  archive_segments (a row per 2,000-event segment)", both(d1.segments, d1.archived)],
    ["  archive_ids (a row per archived event: lookups by id)", both(d1.ids, d1.archived)],
    ["  archive_summaries (a keyed Bloom filter per segment)", both(d1.summaries, d1.archived)],
    ["D1 free pages in the files (left by the archiver's deletes until new rows reuse them)", mib(d1.free)],
    [`R2 per archived event, segments (${r2.objects.toLocaleString("en-US")} objects under archive/${PROJECT}/)`, `${per(r2.segments, d1.archived)} (${mib(r2.segments)})`],
    ["R2 per archived event, CSV companions", `${per(r2.csv, d1.archived)} (${mib(r2.csv)})`],
    ["R2 per archived event, JSON companions", `${per(r2.json, d1.archived)} (${mib(r2.json)})`],
  ]);
  archivePace(persistDir, state, report);
}

/**
 * Archive pace against ingest pace. bench-jobs.json records the cold load (its events, seconds, and
 * the instant it ended) and the tail (how long sealing took to catch up after it). Each segment's
 * created_at is the start of the alarm that sealed it (up to 25 segments an alarm share it). So:
 * events of alarms begun while ingest ran, per second of ingest; events of later alarms per second
 * from the first of them to caught-up (sealing alone on a backlog: its own pace, where during ingest
 * it can go no faster than events arrive); and both over the whole load.
 */
function archivePace(persistDir, { coldLoad, archiveTail }, report) {
  if (!coldLoad?.at || !archiveTail) {
    report("Archive pace vs ingest pace", [["bench-jobs.json", "records no cold load with its end (a load cut off and resumed records its last leg only): no figure"]]);
    return;
  }
  const end = Date.parse(coldLoad.at);
  const start = end - coldLoad.seconds * 1000;
  const alarms = [];
  // Segments of events received during the cold load only: later ones (a sweep of other benches' events) are not its tail.
  const query = "SELECT created_at, count FROM archive_segments WHERE project_id = ? AND first_received_at <= ?";
  eachDb(persistDir, D1, "archive_segments", (db) => alarms.push(...db.prepare(query).all(PROJECT, coldLoad.at).map((s) => ({ at: Date.parse(s.created_at), count: s.count }))));
  const during = alarms.filter((s) => s.at >= start && s.at <= end);
  const tail = alarms.filter((s) => s.at > end);
  // A wait for the tail cut off and resumed records only its last leg: then the last alarm's start bounds it.
  const caughtUp = Math.max(end + archiveTail.seconds * 1000, ...tail.map((s) => s.at));
  const sum = (list) => list.reduce((n, s) => n + s.count, 0);
  const ingest = coldLoad.events / coldLoad.seconds;
  const first = Math.min(...during.map((s) => s.at), ...tail.map((s) => s.at));
  const tailSeconds = tail.length ? (caughtUp - Math.min(...tail.map((s) => s.at))) / 1000 : 0;
  const pace = (events, seconds) => (seconds > 0 ? `${fmt.rate(events / seconds, "events/s")}: ${(events / seconds / ingest).toFixed(2)}x ingest pace (${events.toLocaleString("en-US")} events in ${seconds.toFixed(0)} s)` : "none");
  report(`Archive pace vs ingest pace (bench-jobs.json's cold load, ended ${coldLoad.at}; seal times from archive_segments.created_at)`, [
    ["ingest pace, the ledger's alarm sealing meanwhile", `${fmt.rate(ingest, "events/s")} (${coldLoad.events.toLocaleString("en-US")} events in ${coldLoad.seconds.toFixed(0)} s)`],
    ["first seal after ingest began (first upkeep check: 60 s after the first commit)", Number.isFinite(first) ? `${((first - start) / 1000).toFixed(0)} s` : "none"],
    ["archive pace while ingest ran (alarms begun before it ended)", pace(sum(during), coldLoad.seconds)],
    ["archive pace in the tail, sealing alone (from its first alarm to caught up)", pace(sum(tail), tailSeconds)],
    ["archive pace over the whole load (ingest start to caught up)", pace(sum(during) + sum(tail), (caughtUp - start) / 1000)],
    ["caught up after ingest ended / left hot (the last partial segment)", `${((caughtUp - end) / 1000).toFixed(0)} s / ${archiveTail.hot.toLocaleString("en-US")} rows`],
  ]);
}
