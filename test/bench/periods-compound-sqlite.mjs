// How a list would read a project's hot events kept in a table per week of arrival (the periods route under 4
// D1 rows an event, issue 38; bench README "Where an event's rows go at ingest"), measured in Node's SQLite
// before it is built. The same events are in one table and in five week tables, each keyed (project_id, seq)
// WITHOUT ROWID with event-query.ts's walk indexes. A page of 51 newest first is read three ways: from the one
// table; through a view that is the weeks' UNION ALL; and as one compound statement, today's walk once per
// week table under a single ORDER BY ... LIMIT. The question is whether readers could name a view and keep
// their statements, or must build the compound. Not Witness code: run by hand,
// `N=1000000 npx node test/bench/periods-compound-sqlite.mjs` (under a minute; a file in the system's temp
// directory, removed at the end). Figures in the bench README ("A view or a compound over week tables").
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";

const N = Number(process.env.N ?? 1_000_000), C = 100, WEEKS = 5;
const file = join(tmpdir(), `periods-compound-${process.pid}.db`);
process.on("exit", () => rmSync(file, { force: true }));
const db = new DatabaseSync(file);
db.exec("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -1000000;");
const COLUMNS = "project_id TEXT NOT NULL, seq INTEGER NOT NULL, occurred_at TEXT NOT NULL, action TEXT, organization TEXT, actor_id TEXT, target_id TEXT, body TEXT";
const indexes = (t) => `CREATE INDEX ${t}_time ON ${t} (project_id, occurred_at, seq);
  CREATE INDEX ${t}_org ON ${t} (project_id, organization, occurred_at, seq);
  CREATE INDEX ${t}_actor ON ${t} (project_id, actor_id, occurred_at, seq);`;
const weeks = Array.from({ length: WEEKS }, (_, w) => `week_${w}`);
for (const t of ["one", ...weeks]) db.exec(`CREATE TABLE ${t} (${COLUMNS}, PRIMARY KEY (project_id, seq)) WITHOUT ROWID; ${indexes(t)}`);
db.exec(`CREATE VIEW weeks AS ${weeks.map((t) => `SELECT * FROM ${t}`).join(" UNION ALL ")}`);
const inserts = Object.fromEntries(["one", ...weeks].map((t) => [t, db.prepare(`INSERT INTO ${t} VALUES ('p', ?, ?, ?, ?, ?, ?, ?)`)]));
const t0 = Date.parse("2026-10-31T00:00:00.000Z"), spanMs = 30 * 86_400_000;
db.exec("BEGIN");
for (let c = 0; c < N / C; c++) {
  const ms = t0 + Math.floor((c * C * spanMs) / N), at = new Date(ms).toISOString();
  const week = weeks[Math.min(WEEKS - 1, Math.floor(((ms - t0) * WEEKS) / spanMs))];
  for (let k = 0; k < C; k++) {
    const i = c * C + k;
    const values = [i + 1, at, `a.${i % 6}`, `org_${i % 50}`, `user_${i % 5000}`, `doc_${i % 20000}`, "x".repeat(300)];
    inserts.one.run(...values);
    inserts[week].run(...values);
  }
}
db.exec("COMMIT; ANALYZE;");

const ORDER = "ORDER BY occurred_at DESC, seq DESC";
const mid = new Date(t0 + spanMs / 2).toISOString();
const cursor = `(occurred_at, seq) < ('${mid}', ${N / 2})`;
const cases = [
  ["no filter, first page", ""],
  ["an organization (1 in 50), first page", "AND organization = 'org_7'"],
  ["an actor (1 in 5,000), first page", "AND actor_id = 'user_77'"],
  ["an actor with no event", "AND actor_id = 'nobody'"],
  ["no filter, a cursor half-way back", `AND ${cursor}`],
  ["an organization, a cursor half-way back", `AND organization = 'org_7' AND ${cursor}`],
];
function p50p95(sql) {
  const statement = db.prepare(sql);
  for (let i = 0; i < 30; i++) statement.all();
  const ms = [];
  for (let i = 0; i < 200; i++) {
    const start = performance.now();
    statement.all();
    ms.push(performance.now() - start);
  }
  ms.sort((a, b) => a - b);
  return `${ms[100].toFixed(3)} / ${ms[190].toFixed(3)}`;
}
const plan = (sql) => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all().some((r) => /TEMP B-TREE/.test(r.detail)) ? " (sorts)" : " (merges)");
console.log(`${N.toLocaleString("en-US")} events; p50 / p95 ms, 200 rounds`);
console.log("| page of 51 | one table | a view of the weeks | a compound of the weeks |\n|---|---|---|---|");
for (const [name, where] of cases) {
  const walk = (t) => `SELECT seq, occurred_at FROM ${t} WHERE project_id = 'p' ${where}`;
  const one = `${walk("one")} ${ORDER} LIMIT 51`;
  const view = `${walk("weeks")} ${ORDER} LIMIT 51`;
  const compound = `${weeks.map(walk).join(" UNION ALL ")} ${ORDER} LIMIT 51`;
  console.log(`| ${name} | ${p50p95(one)} | ${p50p95(view)}${plan(view)} | ${p50p95(compound)}${plan(compound)} |`);
}
// A merge needs the ORDER BY's columns among the selected ones: a view read for `seq` alone is sorted whole.
const seqOnly = `SELECT seq FROM weeks WHERE project_id = 'p' AND organization = 'org_7' AND ${cursor} ${ORDER} LIMIT 51`;
console.log(`\nthe same organization page through the view, selecting seq alone: ${p50p95(seqOnly)}${plan(seqOnly)}`);
