// Issue 38 item 1: what one event costs over its life, in billed rows and in dollars.
// BENCH_COST_EVENTS (default 20,000) events in a fresh project of their own, then three phases, each
// between a reset of the service's meter and a read of its totals (GET /__meter: rows since the reset,
// the Worker's and the Durable Objects', which share one isolate under wrangler dev):
//   ingest   the events through the batch endpoint (BENCH_COST_BATCH a request, default 100, with
//            BENCH_COST_IN_FLIGHT requests in flight, default 6; BENCH_COST_BATCH=1 BENCH_COST_IN_FLIGHT=1
//            is an app sending one event a request, each its own commit);
//   archive  hot window 0 days, the daily cron wakes the ledger, its alarms seal every event into R2;
//   purge    a retention rule `*` kept 1 day (every event happened days ago: retention goes by
//            occurred_at), the daily cron wakes the ledger, which retires the archived segments.
// The cron does housekeeping of its own on every run; a run with nothing due for the project, taken
// just before the phase (same data), is subtracted from archive and purge, and printed.
// Between ingest and archive it also times reads by id and GET /v1/events/verify over the hot events.
// Then the monthly bill per million events a month at Cloudflare's published prices (model below).
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { quote, sql } from "../../src/scripts/lib.mjs";
import { d1FileOf, d1Pages, growth, runCron } from "./archive-helpers.mjs";
import { apiCall, batchLoad, createKey, fmt, httpGet, latencies, meterRows, reportMeter, resetMeter, sampleEvent } from "./lib.mjs";

/**
 * Published prices, USD, Workers Paid, past the included monthly amounts (left out: this is the
 * marginal cost of a million events, not a bill with its allowance):
 *   D1                       developers.cloudflare.com/d1/platform/pricing
 *   Durable Objects (SQLite) developers.cloudflare.com/durable-objects/platform/pricing
 *   R2 (Standard)            developers.cloudflare.com/r2/pricing
 * Requests and CPU time (Workers, Durable Objects) are left out too: a batch of 100 events is one request.
 */
const PRICE = {
  d1Written: 1.0 / 1e6,
  d1Read: 0.001 / 1e6,
  d1GbMonth: 0.75,
  doWritten: 1.0 / 1e6,
  doRead: 0.001 / 1e6,
  doGbMonth: 0.2,
  r2GbMonth: 0.015,
  r2ClassA: 4.5 / 1e6,
  r2ClassB: 0.36 / 1e6,
};
const GB = 1e9;

/** Issue 38's Why: 17 D1 rows over an event's life, ~$19 per million events a month with a year kept. */
const ISSUE = { ingest: 11, archive: 5, purge: 1, life: 17, dollars: 19 };

/** Archiving or purging that moves nothing for this long has stalled: see the service's log. */
const STALL_MS = 120_000;

/**
 * sampleEvent (an actor, an organization, metadata, one target) with a second target on every other
 * event (1.5 on average), as real events vary; BENCH_COST_TARGETS=1 keeps one, as issue 38's figures assume.
 * sampleEvent spreads occurred_at over a year, like a backfill, and the ledger's rollups keep a row per hour
 * and action: BENCH_COST_LIVE=1 sends them as a live stream would, all within a few minutes (two days ago, so
 * the purge phase's one-day plan still expires them). BENCH_COST_LIVE=now sends them with no occurred_at, as
 * the client package does: they happen when received, a lone one is found by id at its instant
 * (src/model/event-lookup.ts), a batch's are in time order through its commit's span with no time index
 * entry each (migration 0040), and the purge phase is not run (retention goes by occurred_at, and they
 * happened now; it writes 0.01 rows an event in the other modes).
 * sampleEvent names 50 organizations in turn, each twice a request of 100; BENCH_COST_TENANT=1 gives a
 * request's events one organization, as a tenant's own batch (or a bulk operation's events) names it.
 */
const LIVE_FROM = Date.now() - 2 * 86_400_000;
const LIVE = process.env.BENCH_COST_LIVE ?? "";
const TENANT = process.env.BENCH_COST_TENANT === "1";
function costEvent(i) {
  const event = sampleEvent(i);
  if (TENANT) event.organization = `org_${Math.floor(i / BATCH) % 50}`;
  if (process.env.BENCH_COST_TARGETS !== "1" && i % 2 === 1) event.targets.push({ type: "folder", id: `folder_${i % 500}`, name: "Finance" });
  if (LIVE === "1") event.occurred_at = new Date(LIVE_FROM + i * 10).toISOString();
  if (LIVE === "now") delete event.occurred_at;
  return event;
}

/** The meter's totals once they stopped moving for `quietMs` (alarms and outbox work finish after the answers). */
async function settledRows(url, quietMs = 4000) {
  let last = JSON.stringify(await meterRows(url));
  let since = performance.now();
  while (performance.now() - since < quietMs) {
    await new Promise((r) => setTimeout(r, 500));
    const now = JSON.stringify(await meterRows(url));
    if (now !== last) [last, since] = [now, performance.now()];
  }
  return JSON.parse(last);
}

const minus = (a, b) => ({ d1Read: a.d1Read - b.d1Read, d1Written: a.d1Written - b.d1Written, doRead: a.doRead - b.doRead, doWritten: a.doWritten - b.doWritten });
const plus = (a, b) => ({ d1Read: a.d1Read + b.d1Read, d1Written: a.d1Written + b.d1Written, doRead: a.doRead + b.doRead, doWritten: a.doWritten + b.doWritten });

/** A query on the project's local D1 file, read-only beside the running service: `get` one row or `all` of them. */
function localQuery(how, persistDir, file, query, ...params) {
  const db = new DatabaseSync(join(persistDir, "v3", "d1", "miniflare-D1DatabaseObject", file), { readOnly: true });
  try {
    return db.prepare(query)[how](...params);
  } finally {
    db.close();
  }
}
const localGet = (...args) => localQuery("get", ...args);

/**
 * BENCH_PERIODS=1: the service runs with periods on (src/model/periods.ts; startWitness shortens them to
 * PERIOD_SECONDS 120 and the default window to 0 days), so the project's events go to a period, which the
 * archive seals once it is past and the cron then drops whole. The hot events are then in the main tables
 * and in each period's: the events table's copies named events_p<n>.
 */
const PERIODS = process.env.BENCH_PERIODS === "1";

/** The shard's events tables: the main one and each period's. */
const eventTables = (persistDir, file) =>
  localQuery("all", persistDir, file, "SELECT name FROM sqlite_master WHERE type = 'table' AND (name = 'events' OR name GLOB 'events_p[0-9]*')").map((r) => r.name);

/** SQL over every events table of the shard: `select` (naming table `e`) once a table, as one UNION ALL. */
const overEventTables = (persistDir, file, select) => eventTables(persistDir, file).map((t) => select.replaceAll("FROM events e", `FROM ${t} e`)).join(" UNION ALL ");
const localAll = (...args) => localQuery("all", ...args);

/**
 * Reads of events by id alone, p50/p95 in 100 rounds through the proxy: the project's get, the public receipt
 * (no project), and an id no event has (same tag and millisecond as a real one, other random bits). Hot, each
 * is found through its commit's span (src/model/event-lookup.ts); archived, through the segment of the id's
 * millisecond (src/storage/archive-lookup.ts), which the unknown id reads and finds nothing in.
 */
async function readsById(url, key, ids, tier) {
  const auth = { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "127.0.0.21" };
  const pub = { "CF-Connecting-IP": "127.0.0.22" };
  let i = 0;
  const next = () => ids[i++ % ids.length];
  const forged = ids[0].slice(0, 15) + (ids[0].slice(15, 18) === "000" ? "001" : "000") + ids[0].slice(18);
  const expect = (status) => (res) => {
    if (res.status !== status) throw new Error(`a read of ${tier} events answered ${res.status}, expected ${status}: ${res.body}`);
  };
  const [get, receipt, unknown] = await latencies(
    [
      () => httpGet(`${url}/v1/events/${next()}`, auth).then(expect(200)),
      () => httpGet(`${url}/v1/receipts/${next()}`, pub).then(expect(200)),
      () => httpGet(`${url}/v1/events/${forged}`, auth).then(expect(404)),
    ],
    100,
    5,
  );
  return { get, receipt, unknown };
}

/**
 * GET /v1/events/verify over the project, `runs` times: the seconds of each. Hot, verify also checks the rows
 * standing in for their index entries (src/model/stand-ins.ts), of which live events have the most.
 */
async function verifyRuns(url, key, runs) {
  const auth = { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "127.0.0.23" };
  const seconds = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const res = await httpGet(`${url}/v1/events/verify`, auth);
    const body = res.body.toString();
    if (res.status !== 200 || JSON.parse(body).data.ok !== true) throw new Error(`verify answered ${res.status}: ${body.slice(0, 300)}`);
    seconds.push((performance.now() - started) / 1000);
  }
  return seconds;
}

/** Bytes a directory's SQLite files hold in pages (dbstat), or their size on disk where dbstat cannot be read. */
function sqliteBytes(dir) {
  let bytes = 0;
  let files = 0;
  let entries = [];
  try {
    entries = readdirSync(dir, { recursive: true }).filter((f) => f.endsWith(".sqlite") && !f.endsWith("metadata.sqlite"));
  } catch {
    return { bytes, files };
  }
  for (const f of entries) {
    const path = join(dir, f);
    files++;
    try {
      const db = new DatabaseSync(path, { readOnly: true });
      try {
        bytes += db.prepare("SELECT coalesce(sum(pgsize), 0) AS b FROM dbstat").get().b;
      } finally {
        db.close();
      }
    } catch {
      for (const part of [path, `${path}-wal`]) {
        try {
          bytes += statSync(part).size;
        } catch {}
      }
    }
  }
  return { bytes, files };
}

/** The Durable Objects' SQLite (the ledgers' own storage among them), in pages. */
const doBytes = (persistDir) => sqliteBytes(join(persistDir, "v3", "do")).bytes;

/** Objects and bytes in local R2, every bucket (miniflare keeps each bucket's index in a SQLite file). */
function r2Objects(persistDir) {
  const dir = join(persistDir, "v3", "r2", "miniflare-R2BucketObject");
  const out = { objects: 0, bytes: 0 };
  let files = [];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite");
  } catch {
    return out;
  }
  for (const f of files) {
    const db = new DatabaseSync(join(dir, f), { readOnly: true });
    try {
      if (!db.prepare("SELECT 1 FROM sqlite_master WHERE name = '_mf_objects'").get()) continue;
      const row = db.prepare("SELECT count(*) AS n, coalesce(sum(size), 0) AS b FROM _mf_objects").get();
      out.objects += row.n;
      out.bytes += row.b;
    } finally {
      db.close();
    }
  }
  return out;
}

/** Polls `value()` until `done(v)`; throws when it stops moving for STALL_MS. */
async function until(value, done, label) {
  let last = value();
  let moved = performance.now();
  while (!done(last)) {
    await new Promise((r) => setTimeout(r, 250));
    const now = value();
    if (JSON.stringify(now) !== JSON.stringify(last)) [last, moved] = [now, performance.now()];
    else if (performance.now() - moved > STALL_MS) throw new Error(`${label} stalled at ${JSON.stringify(now)} for ${STALL_MS / 1000} s: see the service's log`);
  }
  return last;
}

/** A run of the daily cron with nothing due for the project: what every run costs anyway, to subtract. */
async function cronAlone(url) {
  await resetMeter(url);
  await runCron(url);
  return settledRows(url);
}

/** The worker was reloaded (wrangler dev rebuilds when a source file changes): its meter's totals started again from 0. */
class Reloaded extends Error {}

/**
 * Up to BENCH_COST_TRIES (3) runs, each with a project of its own, until one runs through without a
 * reload of the worker: a reload starts the meter's totals again, so a phase it cut through would count
 * only its tail. Seen by the runtime's process id (wrangler dev starts a new one on each reload) and by
 * a floor no phase can be under (each writes at least one D1 row per event: its row, its id index entry,
 * its id index entry's deletion).
 */
export default async function costBench(ctx) {
  const tries = Number(process.env.BENCH_COST_TRIES ?? 3);
  for (let attempt = 1; ; attempt++) {
    const runtime = ctx.processes().runtime;
    try {
      return await measure(ctx, runtime);
    } catch (error) {
      // A reload also cuts off the requests in flight (socket hang up): those count as a reload too.
      const reloaded = error instanceof Reloaded || ctx.processes().runtime !== runtime;
      if (!reloaded || attempt >= tries) throw error;
      console.log(`\ncost: ${error instanceof Reloaded ? error.message : `the worker was reloaded (${error.message})`}; measuring again with a new project (${attempt + 1} of ${tries})`);
      // The new runtime answers once its reload is done.
      await new Promise((r) => setTimeout(r, 5000));
    }
  }
}

const BATCH = Number(process.env.BENCH_COST_BATCH ?? 100);
const IN_FLIGHT = Number(process.env.BENCH_COST_IN_FLIGHT ?? 6);

async function measure({ url, persistDir, report, processes }, runtime) {
  const n = Number(process.env.BENCH_COST_EVENTS ?? 20_000);
  // A phase that writes at least a D1 row an event (ingest, archive) and counted fewer saw the meter start again.
  // The purge writes next to nothing since archived ids need no rows (src/model/event-id.ts): only the runtime's pid tells there.
  const check = (phase, rows, floor = n) => {
    const now = processes().runtime;
    if (now !== runtime) throw new Reloaded(`the worker was reloaded during ${phase} (runtime ${runtime} -> ${now}: a source file changed)`);
    if (rows && rows.d1Written < floor) throw new Reloaded(`${phase} counted ${rows.d1Written} D1 rows written for ${n} events: the meter started again part-way (a reload)`);
  };
  // A fresh project each run, so a kept BENCH_DATA measures the same thing again.
  const projectId = `bench-cost-${Date.now().toString(36)}`;
  const key = createKey(persistDir, projectId);
  const setHotDays = (days) => sql(`UPDATE projects SET hot_days = ${days === null ? "NULL" : days} WHERE id = ${quote(projectId)}`, { persistTo: persistDir });
  // With periods, the project archives within the default window (0 days here), as a project must to write to them;
  // the ledger's alarms then archive its events of the main tables at once, none of the period's till it is sealed.
  const tiering = PERIODS ? 0 : null;
  setHotDays(tiering);
  // The ledger's first wake sets it up, and the cron records the new key in the chain (witness.key.created):
  // both before the meter counts anything.
  await runCron(url);
  await settledRows(url);
  if (PERIODS) {
    // The cron made the shard's periods; writers wait a minute after that (ARM_LEAD_MS), and a ledger reads them at
    // its start, before its first commit (storage/commit-arms.ts): the warm-up and every commit after go to the period.
    await new Promise((r) => setTimeout(r, 65_000));
    await apiCall(url, key, "POST", "/v1/events", { action: "bench.warmup" });
    await new Promise((r) => setTimeout(r, 2000));
    await settledRows(url);
  }

  // 1. Ingest.
  const d1Before = d1Pages(persistDir);
  const doBefore = doBytes(persistDir);
  const r2Before = r2Objects(persistDir);
  await resetMeter(url);
  const load = await batchLoad({ url, key, total: n, makeEvent: costEvent, batchSize: BATCH, concurrency: IN_FLIGHT });
  const ingest = await settledRows(url);
  check("ingest", ingest);
  await reportMeter(url, "cost: ingest");
  const file = d1FileOf(persistDir, projectId);
  const d1Ingested = d1Pages(persistDir);
  const doIngested = doBytes(persistDir);
  const r2Ingested = r2Objects(persistDir);
  const counted = "SELECT count(*) AS n FROM events e WHERE e.project_id = ? AND e.action NOT LIKE 'witness.%' AND e.action <> 'bench.warmup'";
  const hotBench = () => {
    const tables = eventTables(persistDir, file);
    return localGet(persistDir, file, `SELECT sum(n) AS n FROM (${overEventTables(persistDir, file, counted)})`, ...tables.map(() => projectId)).n ?? 0;
  };
  const inMain = () => localGet(persistDir, file, counted, projectId).n;
  const archivedAll = () => localGet(persistDir, file, "SELECT coalesce(sum(count), 0) AS n FROM archive_segments WHERE project_id = ?", projectId).n;
  if (hotBench() !== n) throw new Error(`${projectId}: ${hotBench()} events hot after the load, expected ${n}`);

  // Ids to read back hot now and once archived (found by the ids alone since located ids: src/model/event-id.ts).
  const sampled = "SELECT e.id FROM events e WHERE e.project_id = ? AND e.action NOT LIKE 'witness.%' AND e.action <> 'bench.warmup'";
  const sampleIds = localAll(persistDir, file, `SELECT id FROM (${overEventTables(persistDir, file, sampled)}) ORDER BY random() LIMIT 50`, ...eventTables(persistDir, file).map(() => projectId)).map((r) => r.id);
  const arms = { main: inMain(), periods: n - inMain() };
  if (PERIODS) console.log(`cost: the ${n} events are ${arms.main} in the main tables, ${arms.periods} in periods (${eventTables(persistDir, file).join(", ")})`);
  const hotReads = await readsById(url, key, sampleIds, "hot");
  await resetMeter(url);
  const hotVerify = await verifyRuns(url, key, 3);
  await reportMeter(url, "cost: verify of the hot events");

  // 2. Archive: hot window 0 days; the cron wakes the ledger, its alarms seal everything received before now.
  const cronBeforeArchive = await cronAlone(url);
  check("a cron run with nothing due");
  await resetMeter(url);
  setHotDays(0);
  if (PERIODS) {
    // A period is sealed once it is past and the default window (0 days) with it; the cron marks it and wakes the
    // ledger, whose alarms seal its rows and keep them; a later cron drops it once all is sealed.
    const ends = eventTables(persistDir, file).filter((t) => t !== "events").map((t) => (Number(t.slice("events_p".length)) + 1) * 120_000);
    const wait = Math.max(0, ...ends) + 1000 - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    await runCron(url);
    await until(archivedAll, (a) => a >= n, `${projectId}: sealing the period`);
    for (let runs = 1; hotBench() > 0; runs++) {
      if (runs > 20) throw new Error(`${projectId}: ${hotBench()} events still hot after ${runs} cron runs: the period was not dropped`);
      await runCron(url);
    }
  } else {
    await runCron(url);
    await until(hotBench, (h) => h === 0, `${projectId}: archiving`);
  }
  const archiveGross = await settledRows(url);
  setHotDays(tiering);
  // With periods, sealing writes a segment's rows and the drop one: far under a row an event.
  check("archiving", archiveGross, PERIODS ? 0 : n);
  await reportMeter(url, "cost: archive");
  const archive = minus(archiveGross, cronBeforeArchive);
  const seg = localGet(
    persistDir,
    file,
    "SELECT count(*) AS segments, coalesce(sum(count), 0) AS events, coalesce(sum(bytes), 0) AS bytes, coalesce(sum(csv_bytes), 0) AS csv, coalesce(sum(json_bytes), 0) AS json FROM archive_segments WHERE project_id = ?",
    projectId,
  );
  const d1Archived = d1Pages(persistDir);
  const doArchived = doBytes(persistDir);
  const r2Archived = r2Objects(persistDir);

  const reads = await readsById(url, key, sampleIds, "archived");

  // 3. Purge: a plan that keeps every event one day; all of them happened before yesterday (sampleEvent's
  // occurred_at lies within the year before 2026-11-15): retention goes by occurred_at (src/chain/retention.ts,
  // retention-archive.ts), so nothing needs backdating. The cron's share is taken before the plan exists (once
  // it does, every cron run purges). The plan's change is itself an event (witness.retention.changed, kept
  // hot), made before the meter resets: no purge work.
  const none = { d1Read: 0, d1Written: 0, doRead: 0, doWritten: 0 };
  let cronBeforePurge = none;
  let purge = none;
  if (LIVE !== "now") {
    cronBeforePurge = await cronAlone(url);
    check("a cron run with nothing due");
    await apiCall(url, key, "PUT", "/v1/retention", { rules: [{ pattern: "*", days: 1 }] });
    await settledRows(url);
    await resetMeter(url);
    await runCron(url);
    await until(archivedAll, (a) => a <= seg.events - n, `${projectId}: purging`);
    const purgeGross = await settledRows(url);
    check("the purge", purgeGross, 0);
    await reportMeter(url, "cost: purge");
    purge = minus(purgeGross, cronBeforePurge);
  }
  const d1Purged = d1Pages(persistDir);
  const doPurged = doBytes(persistDir);
  const r2Purged = r2Objects(persistDir);
  if (hotBench() !== 0) throw new Error(`${projectId}: ${hotBench()} events hot after the purge`);

  printFigures({
    n, projectId, report, load, seg,
    rows: { ingest, archive, purge },
    cron: { archive: cronBeforeArchive, purge: cronBeforePurge },
    d1: { hot: growth(d1Before, d1Ingested, file).total, archived: growth(d1Before, d1Archived, file).total, purged: growth(d1Before, d1Purged, file).total },
    dob: { hot: doIngested - doBefore, archived: doArchived - doBefore, purged: doPurged - doBefore },
    r2: { ingest: diffR2(r2Before, r2Ingested), archive: diffR2(r2Ingested, r2Archived), purge: diffR2(r2Archived, r2Purged) },
  });
  const ms = (l) => `p50 ${l.p50.toFixed(1)} / p95 ${l.p95.toFixed(1)} ms`;
  report("Hot events read by id (100 rounds, each a different event of the 20,000, through the proxy)", [
    ["GET /v1/events/{id}", ms(hotReads.get)],
    ["GET /v1/receipts/{id} (public: no project)", ms(hotReads.receipt)],
    ["GET /v1/events/{id}, an id no event has, same tag and millisecond (404)", ms(hotReads.unknown)],
  ]);
  report("Verify of the hot events (GET /v1/events/verify, three runs through the proxy)", [
    ["seconds", hotVerify.map((t) => t.toFixed(2)).join(" / ")],
    ["the fastest run", fmt.rate(n / Math.min(...hotVerify), "events/s")],
  ]);
  report("Archived events read by id (100 rounds, each a different event of the 20,000, through the proxy)", [
    ["GET /v1/events/{id}", ms(reads.get)],
    ["GET /v1/receipts/{id} (public: no project, found by the id's tag)", ms(reads.receipt)],
    ["GET /v1/events/{id}, an id no event has, same tag and millisecond (404)", ms(reads.unknown)],
  ]);
}

const diffR2 = (a, b) => ({ objects: b.objects - a.objects, bytes: b.bytes - a.bytes });

/**
 * The model, steady state: every month 1M events are ingested; each is hot (in D1) for its first month
 * (the default window, 30 days), then archived (R2, with what D1 keeps of it: its id index entry, its
 * share of a segment's row and summary) for 11 months, then purged: kept a year. Rows written and read
 * are paid once per event over its life, so a month's bill pays one life's rows for 1M events. Storage
 * at steady state holds 1M hot events and 11M archived ones in D1 and R2. The ledger's own SQLite (the
 * transparency log's tiles and rollups) keeps what ingest added after a purge: counted for 12 months
 * here, it keeps growing past a year. R2 gets no object at ingest (the log's R2 tiles are copies made
 * when read). R2 Class A: one put per object created while archiving (a lower bound: overwrites are not
 * seen; the purge's rewrite of the one segment that holds a kept witness.* event is left out); Class B
 * (a segment read per purge step) is left out, as are requests and CPU.
 */
function printFigures({ n, projectId, report, load, seg, rows, cron, d1, dob, r2 }) {
  const per = (v) => v / n;
  const f2 = (v) => per(v).toFixed(2);
  const life = plus(plus(rows.ingest, rows.archive), rows.purge);
  const line = (label, r, objects, issue) => [
    label,
    `D1 written ${f2(r.d1Written).padStart(6)}   DO written ${f2(r.doWritten).padStart(6)}   read D1 ${f2(r.d1Read).padStart(7)}, DO ${f2(r.doRead).padStart(6)}   R2 objects ${(objects / n).toFixed(4)}${issue === undefined ? "" : `   (issue: ${issue} D1 rows)`}`,
  ];
  const when = { "1": ", live (occurred within minutes)", now: ", live (no occurred_at sent: they happen when received)" }[LIVE] ?? ", backfilled over a year";
  const targets = `${process.env.BENCH_COST_TARGETS === "1" ? "1 target each" : "1.5 targets each on average"}${when}${TENANT ? ", one organization a request" : ""}`;
  report(`Rows per event over its life (${n.toLocaleString("en-US")} events of ${projectId}, ${targets}, ${BATCH} a request, ${IN_FLIGHT} in flight; ${fmt.rate(load.perSecond, "events/s")})`, [
    line("ingest", rows.ingest, r2.ingest.objects, ISSUE.ingest),
    line("archive (net of a cron run)", rows.archive, r2.archive.objects, ISSUE.archive),
    LIVE === "now"
      ? ["purge of archived events", "not run: these events happened now, and retention goes by occurred_at (0.01 D1 rows an event in the other modes)"]
      : line("purge of archived events (net of a cron run)", rows.purge, 0, ISSUE.purge),
    line("life", life, r2.ingest.objects + r2.archive.objects, ISSUE.life),
    ["", ""],
    ["a cron run with nothing due, subtracted above", `before archiving: D1 written ${cron.archive.d1Written}, DO written ${cron.archive.doWritten}, read ${cron.archive.d1Read + cron.archive.doRead}; before the purge: D1 written ${cron.purge.d1Written}, DO written ${cron.purge.doWritten}, read ${cron.purge.d1Read + cron.purge.doRead} (rows, not per event)`],
    ["rows read", "a lower bound: D1's first() and raw() answer no meta, so their reads are not counted (the archive's and the purge's row reads are raw())"],
    ["purge", `R2 objects deleted: ${-r2.purge.objects} (deletes are free)`],
  ]);

  const kb = (v) => `${Math.round(per(v)).toLocaleString("en-US")} bytes/event`;
  const archivedR2 = seg.bytes + seg.csv + seg.json;
  report(`Bytes per event`, [
    ["D1, hot (dbstat growth of the shard at ingest)", kb(d1.hot)],
    ["D1, once archived (what stays: id index, segment rows, summaries)", kb(d1.archived)],
    ["D1, once purged (growth since before the load)", kb(d1.purged)],
    ["Durable Object SQLite, after ingest / archive / purge", `${kb(dob.hot)} / ${kb(dob.archived)} / ${kb(dob.purged)}`],
    ["R2, at ingest (the log's tiles live in the ledger's SQLite; R2 copies are made when read)", kb(r2.ingest.bytes)],
    [`R2, archived (${seg.segments} segments: gzip JSON lines ${kb(seg.bytes)}, CSV + JSON companions ${kb(seg.csv + seg.json)})`, kb(archivedR2)],
    ["R2, all buckets, growth while archiving", kb(r2.archive.bytes)],
  ]);

  const M = 1e6;
  const cost = {
    "D1 rows written": per(life.d1Written) * M * PRICE.d1Written,
    "D1 rows read": per(life.d1Read) * M * PRICE.d1Read,
    "Durable Object rows written": per(life.doWritten) * M * PRICE.doWritten,
    "Durable Object rows read": per(life.doRead) * M * PRICE.doRead,
    "D1 storage (1M hot + 11M archived events)": ((per(d1.hot) * M + per(Math.max(0, d1.archived)) * 11 * M) / GB) * PRICE.d1GbMonth,
    "Durable Object storage (12M events)": ((Math.max(0, per(dob.hot)) * 12 * M) / GB) * PRICE.doGbMonth,
    "R2 storage (11M archived events)": ((per(r2.ingest.bytes) * 12 * M + per(r2.archive.bytes) * 11 * M) / GB) * PRICE.r2GbMonth,
    "R2 Class A (objects created)": per(r2.ingest.objects + r2.archive.objects) * M * PRICE.r2ClassA,
  };
  const total = Object.values(cost).reduce((s, v) => s + v, 0);
  const usd = (v) => `$${v < 0.01 ? v.toFixed(4) : v.toFixed(2)}`;
  report(`Monthly cost per million events a month, kept a year (steady state; Cloudflare's published prices, allowances left out)`, [
    ...Object.entries(cost).map(([k, v]) => [k, `${usd(v).padStart(8)}  (${fmt.pct(v / total)})`]),
    ["total", `${usd(total).padStart(8)}   issue 38's Why: ${ISSUE.life} D1 rows, ~$${ISSUE.dollars}/M (88% of it rows written); AWS CloudTrail Lake ~$0.75/M, Datadog ~$1.80/M`],
    ["prices", "developers.cloudflare.com/d1/platform/pricing, /durable-objects/platform/pricing, /r2/pricing"],
  ]);
}
