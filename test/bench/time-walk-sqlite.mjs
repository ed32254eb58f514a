// The walks over live commits in Node's own SQLite (migrations 0040-0043): every migration, BENCH_TIME_WALK_EVENTS
// (default 300,000) events committed live, in batches of 100 with no occurred_at, through the ledger's own insert
// statements, then a page of 51 of selectEvents, 400 runs after 50 warm-ups, for lists in time order, by action, by
// organization and by address: the walks of the live spans and the live sets, apart from the runtime (the read bench
// at 1M walks them with BENCH_READS_LIVE=1). Six actions repeat in every batch (sets); one in 1,000 events is a rare
// action (an index entry). Organizations take turns, each twice a batch (index entries); with BENCH_TIME_WALK_TENANT=1 a
// batch names one (a set each, migration 0042). A batch has one address: every other batch one shared address, the rest
// one of 100 (a batch in 200: a run each before migration 0043, a set each since). Pass another checkout's root to time
// its code on the same data shape:
// `npx node test/bench/time-walk-sqlite.mjs [root]`.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { applyMigrations, d1 } from "./sqlite-floor.mjs";

const ROOT = process.argv[2] ?? new URL("../..", import.meta.url).pathname;
const { insertEventsStatements } = await import(join(ROOT, "src/chain/event-insert.ts"));
const { selectEvents } = await import(join(ROOT, "src/model/event-query.ts"));
const { idTag, mintEventId } = await import(join(ROOT, "src/model/event-id.ts"));
const db = new DatabaseSync(":memory:");
applyMigrations(db, ROOT);
const P = "p-live";
const tag = await idTag(P);
const hex = (n) => randomBytes(n).toString("hex");
const N = Number(process.env.BENCH_TIME_WALK_EVENTS ?? 300_000);
const t0 = Date.parse("2026-11-01T00:00:00.000Z");
const tenant = process.env.BENCH_TIME_WALK_TENANT === "1";
db.exec("BEGIN");
for (let c = 0; c < N / 100; c++) {
  const at = new Date(t0 + c * 1000).toISOString();
  const rows = Array.from({ length: 100 }, (_, k) => {
    const seq = c * 100 + k + 1;
    return { row_id: null, id: mintEventId(at, tag), project_id: P, seq, action: seq % 1000 === 0 ? "rare" : `a.${seq % 6}`, organization: `org_${tenant ? c % 50 : seq % 50}`, actor_id: `u_${seq % 5000}`, actor_type: "user",
      actor_name: null, actor_email: null, targets: JSON.stringify([{ id: `d_${seq}`, name: null, type: "doc" }]), metadata: "{}", occurred_at: at, received_at: at,
      ip_address: c % 2 === 0 ? "10.1.1.1" : `10.0.${c % 200}.1`, user_agent: null, pii_salt: null, pii_commitment: hex(32), hash: hex(32), prev_hash: null, signature: null,
      anonymized_at: null, changes: null, schema_version: null, schema_valid: null };
  });
  for (const s of insertEventsStatements(d1, rows)) db.prepare(s.sql).run(...s.params);
}
db.exec("COMMIT");
db.exec("ANALYZE");
const base = { projectId: P, organization: null, actorId: null, ipAddress: null, dateFrom: null, dateTo: null, actions: null, exclude: [] };
const mid = new Date(t0 + (N / 200) * 1000).toISOString();
const cases = [
  ["no filter, first", base, null],
  ["no filter, deep", base, { occurredAt: mid, seq: N / 2 }],
  ["date range, deep", { ...base, dateFrom: new Date(t0).toISOString(), dateTo: mid }, { occurredAt: mid, seq: N / 2 - 50 }],
  ["actions_exclude, first", { ...base, exclude: ["a.1", "a.2"] }, null],
  ["action, first", { ...base, actions: ["a.1"] }, null],
  ["action, deep", { ...base, actions: ["a.1"] }, { occurredAt: mid, seq: N / 2 }],
  ["action, date range", { ...base, actions: ["a.1"], dateFrom: new Date(t0).toISOString(), dateTo: mid }, { occurredAt: mid, seq: N / 2 - 50 }],
  ["3 actions, first", { ...base, actions: ["a.1", "a.2", "a.3"] }, null],
  ["rare action, first", { ...base, actions: ["rare"] }, null],
  ["action and address, first", { ...base, actions: ["a.1"], ipAddress: "10.0.7.1" }, null],
  ["organization, first", { ...base, organization: "org_7" }, null],
  ["organization, deep", { ...base, organization: "org_7" }, { occurredAt: mid, seq: N / 2 }],
  ["organization and action", { ...base, organization: "org_7", actions: ["a.1"] }, null],
  ["address 1 in 2, first", { ...base, ipAddress: "10.1.1.1" }, null],
  ["address 1 in 2, deep", { ...base, ipAddress: "10.1.1.1" }, { occurredAt: mid, seq: N / 2 }],
  ["address 1 in 200, first", { ...base, ipAddress: "10.0.7.1" }, null],
  ["address 1 in 200, deep", { ...base, ipAddress: "10.0.7.1" }, { occurredAt: mid, seq: N / 2 }],
];
for (const [name, sel, cursor] of cases) {
  const st = selectEvents(sel, { columns: "e.*", rowKey: null, cursor, limit: 51 });
  const prep = db.prepare(st.sql);
  let rows;
  for (let i = 0; i < 50; i++) rows = prep.all(...st.params);
  const times = [];
  for (let i = 0; i < 400; i++) { const t = process.hrtime.bigint(); prep.all(...st.params); times.push(Number(process.hrtime.bigint() - t) / 1e6); }
  times.sort((a, b) => a - b);
  console.log(`${name.padEnd(24)} rows ${rows.length}  p50 ${times[200].toFixed(3)} ms  p95 ${times[380].toFixed(3)} ms`);
}

// Verify's check of the rows standing in for index entries (src/model/stand-ins.ts): a column of each page of 2,000
// it reads, against the same pages' chain columns alone (what verify reads anyway). Every row here is marked for a
// span, a run and a type set, and most for an action set, the most a row can ask.
const { checkedRowsSql } = await import(join(ROOT, "src/model/stand-ins.ts"));
const { CHAIN_COLUMNS } = await import(join(ROOT, "src/model/chain-row.ts"));
const WHERE = "r.project_id = ? AND r.seq > ? AND r.seq <= ?";
let unlisted = 0;
for (const [name, statement] of [
  ["verify pages, read", db.prepare(`SELECT ${CHAIN_COLUMNS} FROM events r WHERE ${WHERE} ORDER BY seq LIMIT 2000`)],
  // key: null, as verify-range.ts reads a project with no key (it looks the key up once a walk).
  ["verify pages, checked", db.prepare(checkedRowsSql(CHAIN_COLUMNS, { project: "?1", lo: "?2 + 1", hi: "?3", key: null }, 2000))],
]) {
  const t = process.hrtime.bigint();
  for (let after = 0; after < N; after += 2000) for (const row of statement.all(P, after, N)) unlisted += row.unlisted ?? 0;
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  console.log(`${name.padEnd(24)} ${N} rows  ${ms.toFixed(0)} ms  ${((ms * 1000) / N).toFixed(2)} µs a row`);
}
if (unlisted !== 0) throw new Error(`the check names ${unlisted} rows of an intact shard`);
