// npm run projects:list [-- --remote]: every project with its shard, event count, newest seq in D1 and
// retention plan; each shard's size against its high-water mark; each project's hot bytes and window. Read-only: it reads D1 (the control database and each event shard) and calls no service.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, dbSql, parseCommand, shardDatabases, sql } from "./lib.mjs";
import { armName, PERIODS_SQL } from "../model/periods.ts";

const USAGE = `usage: npm run projects:list [-- --remote]
  --remote  the deployed databases (default: the local ones of npm run dev)`;

const { flags } = parseCommand(process.argv.slice(2), { usage: USAGE, flags: ["--remote"] });
const remote = flags.has("--remote");

const projects = sql("SELECT * FROM projects ORDER BY id", { remote });
if (projects.length === 0) {
  console.log("No projects yet; create one with npm run keys:create -- <project>");
  process.exit(0);
}
const keys = new Map(
  sql("SELECT project_id, count(*) AS n, sum(revoked_at IS NULL) AS live FROM api_keys GROUP BY project_id", { remote }).map((r) => [r.project_id, r]),
);
// D1's copy of each plan (the ledger holds the authoritative one; both are written together).
const plans = new Map();
for (const r of sql("SELECT project_id, pattern, days FROM retention_rules ORDER BY project_id, pattern", { remote })) {
  plans.set(r.project_id, [...(plans.get(r.project_id) ?? []), `${r.pattern}:${r.days}d`]);
}

// Events per project from every shard (a project being moved has rows on two for a while).
const counts = new Map();
for (const [shard, name] of [...shardDatabases()].sort((a, b) => a[0] - b[0])) {
  // The main tables' events and each period's (src/model/periods.ts): a project's rows may be in several.
  const arms = [null, ...dbSql(name, PERIODS_SQL, { remote }).map((r) => r.n)];
  const events = arms.map((arm) => `SELECT project_id, seq FROM ${armName("events", arm)}`).join(" UNION ALL ");
  const command = `SELECT project_id, count(*) AS events, max(seq) AS head FROM (${events}) GROUP BY project_id`;
  for (const r of dbSql(name, command, { remote })) {
    const c = counts.get(r.project_id) ?? { events: 0, head: null, shards: [] };
    c.events += r.events;
    c.head = Math.max(c.head ?? 0, r.head ?? 0);
    c.shards.push(shard);
    counts.set(r.project_id, c);
  }
}

const table = [["project", "shard", "events", "head seq", "keys (live)", "retention", "created"]];
for (const p of projects) {
  const c = counts.get(p.id) ?? { events: 0, head: null, shards: [] };
  const k = keys.get(p.id) ?? { n: 0, live: 0 };
  const moving = p.move_to !== undefined && p.move_to !== null ? ` -> ${p.move_to}` : "";
  table.push([
    p.id,
    `${p.shard}${moving}`,
    String(c.events),
    c.head === null ? "-" : String(c.head),
    `${k.n} (${k.live ?? 0})`,
    (plans.get(p.id) ?? ["keep forever"]).join(" "),
    String(p.created_at).slice(0, 10),
  ]);
}
const widths = table[0].map((_, i) => Math.max(...table.map((r) => r[i].length)));
for (const r of table) console.log(r.map((cell, i) => cell.padEnd(widths[i])).join("  ").trimEnd());
console.log(
  "\nhead seq: the newest event's seq in D1 (events purged by retention leave seq gaps, so it may exceed events).\n" +
    `retention: pattern:days, most specific wins; npm run projects:retention -- <project> shows and sets it.`,
);

// Shards and hot bytes (issue 22): sizes as the service last measured them (D1's size after a query:
// the daily cron, each ledger at least every minute while it ingests, every project placement).
const MARK_DEFAULT = Number(/^SHARD_HIGH_WATER_BYTES\s*=\s*"(\d+)"/m.exec(readFileSync(join(ROOT, "wrangler.toml"), "utf8"))?.[1] ?? 8e9);
const hasShards = sql("SELECT 1 AS ok FROM sqlite_master WHERE name = 'shards'", { remote }).length > 0;
const measured = new Map(hasShards ? sql("SELECT * FROM shards", { remote }).map((r) => [r.shard, r]) : []);
const gb = (bytes) => (bytes >= 1e9 ? `${(bytes / 1e9).toFixed(2)} GB` : `${(bytes / 1e6).toFixed(1)} MB`);
const hotOnShard = new Map();
for (const c of counts.values()) for (const shard of c.shards) hotOnShard.set(shard, (hotOnShard.get(shard) ?? 0) + c.events);
// In use: the file less the pages its deletes freed since it last grew (src/storage/shard-pressure.ts), what the mark is held against.
const inUse = (m) => (m?.size_bytes == null ? null : Math.max(0, m.size_bytes - (m.freed_bytes ?? 0)));
const shardTable = [["shard", "in use", "file", "high-water mark", "used", "measured"]];
const warnings = [];
for (const [shard] of [...shardDatabases()].sort((a, b) => a[0] - b[0])) {
  const m = measured.get(shard);
  const mark = m?.high_water_bytes ?? MARK_DEFAULT;
  const size = inUse(m);
  const file = m?.size_bytes ?? null;
  shardTable.push([String(shard), size === null ? "-" : gb(size), file === null ? "-" : gb(file), gb(mark), size === null ? "-" : `${Math.round((size / mark) * 100)}%`, m?.measured_at ?? "not yet"]);
  if (size !== null && size >= mark * 0.8) warnings.push(`WARNING: shard ${shard} is at ${Math.round((size / mark) * 100)}% of its high-water mark: past it, its largest projects archive more; add a shard or shorten hot windows.`);
}
const hotTable = [["project", "hot events", "hot bytes (approx.)", "hot window"]];
for (const p of projects) {
  const c = counts.get(p.id) ?? { events: 0, shards: [] };
  const size = inUse(measured.get(p.shard));
  const share = hotOnShard.get(p.shard) ? c.events / hotOnShard.get(p.shard) : 0;
  hotTable.push([p.id, String(c.events), size == null ? "-" : gb(size * share), p.hot_days === null || p.hot_days === undefined ? "all hot" : `${p.hot_days} days`]);
}
for (const t of [shardTable, hotTable]) {
  const w = t[0].map((_, i) => Math.max(...t.map((r) => r[i].length)));
  console.log("");
  for (const r of t) console.log(r.map((cell, i) => cell.padEnd(w[i])).join("  ").trimEnd());
}
for (const line of warnings) console.log(`\n${line}`);
console.log("\nhot bytes: the project's share of its shard's measured size, by hot events (an estimate: D1 has no per-table size).");
