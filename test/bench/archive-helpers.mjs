// Helpers of the archive bench (archive.bench.mjs): its events, SQL on a project's shard,
// the daily cron on demand, a row count for JSON exports, and SQLite's own page accounting.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { ENV, quote, ROOT, shardDatabases, sql, WRANGLER, wrangler } from "../../src/scripts/lib.mjs";
import { httpGet, sampleEvent } from "./lib.mjs";

/**
 * sampleEvent with occurred_at by tier: the part archived later happened in
 * 2025, the part kept hot in 2026 up to October 31, so date_from/date_to (on
 * occurred_at, the only time filter of the API) select exactly one tier.
 * Spread within each year as in sampleEvent, not in ingest order. The hot
 * window ends with the tier's last instant: the witness.key.created events the
 * daily cron records for the bench's keys happened when it ran, later
 * (the bench runs after October 2026: no event may be in the future).
 */
export const COLD_YEAR = ["2025-01-01T00:00:00.000Z", "2025-12-31T23:59:59.999Z"];
export const HOT_YEAR = ["2026-01-01T00:00:00.000Z", "2026-10-31T23:59:59.999Z"];
export function tieredEvent(i, cold, layout = { live: false, total: 0 }) {
  const [start, span] = i < cold ? [Date.UTC(2025, 0, 1), 365 * 86_400] : [Date.UTC(2026, 0, 1), 304 * 86_400];
  if (!layout.live) return { ...sampleEvent(i), occurred_at: new Date(start + ((i * 7919) % span) * 1000).toISOString() };
  // In arrival order, as live events are (their occurred_at is when they were sent): each tier's
  // events evenly over its year, so a sealed segment covers about 2,000 / 24,600 of a day.
  const [at, n] = i < cold ? [i, cold] : [i - cold, layout.total - cold];
  return { ...sampleEvent(i), occurred_at: new Date(start + Math.floor((at * span * 1000) / n)).toISOString() };
}

/** BENCH_LAYOUT: "scattered" (default: each event's occurred_at anywhere in its tier's year, as a backfill) or "live" (in arrival order). */
export function benchLayout() {
  const name = process.env.BENCH_LAYOUT ?? "scattered";
  if (name !== "scattered" && name !== "live") throw new Error(`BENCH_LAYOUT must be scattered or live, not ${name}`);
  return name;
}

/** The project's shard number, from the control database. */
export function projectShard(persistDir, projectId) {
  const [row] = sql(`SELECT shard FROM projects WHERE id = ${quote(projectId)}`, { persistTo: persistDir });
  if (!row) throw new Error(`no project ${projectId} in ${persistDir}`);
  return row.shard;
}

/** SQL on one event shard's local D1 (sql() of src/scripts/lib.mjs only reaches the control database). */
export function shardSql(persistDir, shard, command, file = null) {
  const name = shardDatabases().get(shard);
  if (!name) throw new Error(`wrangler.toml binds no shard ${shard}`);
  const args = ["d1", "execute", name, "--local", "--persist-to", persistDir, "--json", ...(file ? ["--file", file] : ["--command", command])];
  // A read beside the running service can meet its write in progress (SQLITE_BUSY from wrangler's own local D1,
  // seen after a 1M load): a read is tried again, a few seconds apart; a write fails at once, as it may have landed.
  for (let tries = 1; !file && /^\s*SELECT\b/i.test(command) && tries < 5; tries++) {
    const res = spawnSync(WRANGLER, args, { cwd: ROOT, env: ENV, encoding: "utf8" });
    if (res.status === 0) return rowsOf(res.stdout);
    if (!/SQLITE_BUSY/.test(res.stdout + res.stderr)) break;
    console.log(`(the shard was busy; reading again in ${2 * tries} s)`);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2000 * tries);
  }
  return rowsOf(wrangler(args, { quiet: true }));
}

const rowsOf = (out) => JSON.parse(out.slice(out.indexOf("["))).flatMap((r) => r.results ?? []);

/**
 * A project's hot events: the bench's own, and the witness.* events the service
 * recorded in its chain (the daily cron's witness.key.created for each key an
 * operator script made, as the bench makes its keys).
 */
export function storedEvents(persistDir, shard, projectId) {
  // The main events table and each period's (src/model/periods.ts), each a scalar sub-select: D1's SQLite takes at
  // most five terms to a compound SELECT.
  const tables = shardSql(persistDir, shard, "SELECT name FROM sqlite_master WHERE type = 'table' AND (name = 'events' OR name GLOB 'events_p[0-9]*')").map((r) => r.name);
  const sum = (expression) => tables.map((t) => `(SELECT coalesce(sum(${expression}), 0) FROM ${t} WHERE project_id = ${quote(projectId)})`).join(" + ");
  const [row] = shardSql(persistDir, shard, `SELECT ${sum("action NOT LIKE 'witness.%'")} AS bench, ${sum("action LIKE 'witness.%'")} AS witness`);
  return row;
}

/**
 * Hot and archived events of a project, the bench's own (witness.* events
 * left out), and its archive's R2 bytes (segments; export companions where
 * sealed with them). A segment's count covers every event in it, and archived
 * events can only be read back from R2; the witness.* events of the bench's
 * projects are only the cron's witness.key.created records, one for each key
 * whose audit_state it set (bench keys are never revoked), so those not hot
 * are the archived ones. `witness` is all of them, hot or archived.
 */
export function tierCounts(persistDir, shard, projectId) {
  const p = quote(projectId);
  const companions = shardSql(persistDir, shard, "SELECT 1 AS ok FROM pragma_table_info('archive_segments') WHERE name = 'csv_bytes'").length > 0;
  const extra = companions ? ", coalesce(sum(csv_bytes), 0) AS csv, coalesce(sum(json_bytes), 0) AS json, count(csv_bytes) AS with_companions" : "";
  const [row] = shardSql(
    persistDir,
    shard,
    `SELECT coalesce(sum(count), 0) AS stored_archived, ` +
      `count(*) AS segments, coalesce(sum(bytes), 0) AS bytes${extra} FROM archive_segments WHERE project_id = ${p}`,
  );
  const hot = storedEvents(persistDir, shard, projectId);
  const [{ n: witness }] = sql(`SELECT count(*) AS n FROM api_keys WHERE project_id = ${p} AND audit_state IS NOT NULL`, { persistTo: persistDir });
  const archivedWitness = witness - hot.witness;
  if (archivedWitness < 0 || archivedWitness > row.stored_archived) {
    throw new Error(`${projectId}: ${hot.witness} witness.* events hot, but ${witness} keys recorded by the cron: not only its witness.key.created records`);
  }
  return { csv: 0, json: 0, with_companions: 0, ...row, hot: hot.bench, archived: row.stored_archived - archivedWitness, witness };
}

/** The daily cron, as wrangler dev --test-scheduled runs it on request (the answer comes once it has run). */
export async function runCron(url) {
  const res = await httpGet(`${url}/__scheduled?cron=17+3+*+*+*`);
  if (res.status !== 200) throw new Error(`/__scheduled answered ${res.status}: ${res.body}`);
}

/** Streams a body to its end, counting a byte string (one per event, such as a JSON key) across chunk edges. */
export async function countOccurrences(body, needle) {
  const pattern = Buffer.from(needle);
  let count = 0;
  let bytes = 0;
  let carry = Buffer.alloc(0);
  for await (const chunk of body) {
    bytes += chunk.length;
    const text = carry.length ? Buffer.concat([carry, chunk]) : Buffer.from(chunk);
    for (let at = text.indexOf(pattern); at !== -1; at = text.indexOf(pattern, at + pattern.length)) count++;
    // A match that straddles the edge is found in the next round; none is counted twice (the tail is shorter than the pattern).
    carry = text.subarray(Math.max(0, text.length - pattern.length + 1));
  }
  return { count, bytes };
}

/**
 * Bytes of every table and index of each local D1 file, from SQLite's dbstat
 * (local D1 refuses dbstat, Node's SQLite has it), read-only beside the
 * running service. Keyed by file, then by table or index name.
 */
export function d1Pages(persistDir) {
  const dir = join(persistDir, "v3", "d1", "miniflare-D1DatabaseObject");
  const out = {};
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite")) {
    const db = new DatabaseSync(join(dir, file), { readOnly: true });
    try {
      const hasEvents = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'events'").get();
      if (!hasEvents) continue;
      out[file] = Object.fromEntries(db.prepare("SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name").all().map((r) => [r.name, r.bytes]));
    } finally {
      db.close();
    }
  }
  return out;
}

/** Which file holds a project's events (by a row of it, in the main events table or a period's), read-only. */
export function d1FileOf(persistDir, projectId) {
  const dir = join(persistDir, "v3", "d1", "miniflare-D1DatabaseObject");
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite")) {
    const db = new DatabaseSync(join(dir, file), { readOnly: true });
    try {
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND (name = 'events' OR name GLOB 'events_p[0-9]*')").all();
      if (tables.some((t) => db.prepare(`SELECT 1 FROM ${t.name} WHERE project_id = ? LIMIT 1`).get(projectId))) return file;
    } finally {
      db.close();
    }
  }
  throw new Error(`no local D1 file holds events of ${projectId}`);
}

/**
 * Growth between two d1Pages snapshots of one file, split as the issue asks:
 * the events table, the search index (FTS5 and its shadow tables), each index
 * of events, and the rest (whatever else grew).
 */
export function growth(before, after, file) {
  const b = before[file] ?? {};
  const a = after[file] ?? {};
  const parts = { table: 0, fts: 0, indexes: {}, other: {} };
  for (const name of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const delta = (a[name] ?? 0) - (b[name] ?? 0);
    if (delta === 0) continue;
    if (name === "events") parts.table += delta;
    else if (name.startsWith("events_search")) parts.fts += delta;
    else if (name.startsWith("events_")) parts.indexes[name] = delta;
    else parts.other[name] = delta;
  }
  const sum = (o) => Object.values(o).reduce((s, v) => s + v, 0);
  return { ...parts, total: parts.table + parts.fts + sum(parts.indexes) + sum(parts.other) };
}
