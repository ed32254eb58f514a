// npm run projects:list [-- --remote]: every project with its shard, event count, newest seq in D1 and
// retention plan. Read-only: it reads D1 (the control database and each event shard) and calls no service.
import { parseCommand, shardDatabases, sql, wrangler } from "./lib.mjs";

const USAGE = `usage: npm run projects:list [-- --remote]
  --remote  the deployed databases (default: the local ones of npm run dev)`;

const { flags } = parseCommand(process.argv.slice(2), { usage: USAGE, flags: ["--remote"] });
const remote = flags.has("--remote");
const where = remote ? ["--remote"] : ["--local"];

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
  const command = "SELECT project_id, count(*) AS events, max(seq) AS head FROM events GROUP BY project_id";
  const out = wrangler(["d1", "execute", name, ...where, "--json", "--command", command], { quiet: true });
  for (const r of JSON.parse(out.slice(out.indexOf("["))).flatMap((x) => x.results ?? [])) {
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
