// The two routes under 5 D1 rows an event (issue 38), measured in Node's SQLite before either is built. What D1
// bills is measured in workerd by `npm run bench -- billing`: a table row at insert and at delete, an index entry
// at insert only, and a dropped table nothing. Today an event batched live costs its row (1) and its delete at
// archive (1), its entries in the seq index (1), the actor index (1) and the first target's (1), and ~0.7 for the
// sets. The routes:
//   keyed    the events table WITHOUT ROWID, keyed (project_id, seq): no seq index entry (-1 row);
//   periods  a shard's hot events in a table per period of arrival (a week), a period's table dropped once every
//            row in it is archived: no delete per event (-1 row); lists merge one walk per period table.
// Both read the same 1M events (sampleEvent's shape: 50 organizations, 5,000 actors, 20,000 documents, commits of
// 100 over 30 days) through the same queries as event-query.ts's index walks: a page of 51 newest first, each
// walk stopped at the page. Not Witness code: run by hand, `N=1000000 npx node test/bench/routes-sqlite.mjs`
// (a few minutes; a file in the system's temp directory, removed at the end). Figures in the bench README's cost
// section ("The two routes under 5").
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";

const N = Number(process.env.N ?? 1_000_000), C = 100, PERIODS = Number(process.env.PERIODS ?? 5);
const file = join(tmpdir(), `routes-sqlite-${process.pid}.db`);
const db = new DatabaseSync(file);
// The file holds the events three times over (about 2 GB at 1M): it goes however the run ends.
process.on("exit", () => rmSync(file, { force: true }));
db.exec("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -1000000;");
const COLUMNS = "project_id TEXT NOT NULL, seq INTEGER NOT NULL, occurred_at TEXT NOT NULL, action TEXT, organization TEXT, actor_id TEXT, target_id TEXT, body TEXT";
const indexes = (t, seq) =>
  `${seq ? `CREATE UNIQUE INDEX ${t}_seq ON ${t} (project_id, seq);` : ""}
  CREATE INDEX ${t}_time ON ${t} (project_id, occurred_at, seq);
  CREATE INDEX ${t}_org ON ${t} (project_id, organization, occurred_at, seq);
  CREATE INDEX ${t}_actor ON ${t} (project_id, actor_id, occurred_at, seq);
  CREATE INDEX ${t}_target ON ${t} (project_id, target_id, occurred_at, seq);`;
const periodTables = Array.from({ length: PERIODS }, (_, p) => `period_${p}`);
db.exec(`CREATE TABLE today (row_id INTEGER PRIMARY KEY, ${COLUMNS}); ${indexes("today", true)}
  CREATE TABLE keyed (${COLUMNS}, PRIMARY KEY (project_id, seq)) WITHOUT ROWID; ${indexes("keyed", false)}
  ${periodTables.map((t) => `CREATE TABLE ${t} (${COLUMNS}, PRIMARY KEY (project_id, seq)) WITHOUT ROWID; ${indexes(t, false)}`).join("\n")}`);
const t0 = Date.parse("2026-10-31T00:00:00.000Z");
const spanMs = 30 * 86_400_000;
const inserts = Object.fromEntries(["today", "keyed", ...periodTables].map((t) => [t, db.prepare(`INSERT INTO ${t} (project_id, seq, occurred_at, action, organization, actor_id, target_id, body) VALUES ('p', ?, ?, ?, ?, ?, ?, ?)`)]));
db.exec("BEGIN");
for (let c = 0; c < N / C; c++) {
  const ms = t0 + Math.floor((c * C * spanMs) / N);
  const at = new Date(ms).toISOString();
  const period = periodTables[Math.min(PERIODS - 1, Math.floor(((ms - t0) * PERIODS) / spanMs))];
  for (let k = 0; k < C; k++) {
    const i = c * C + k, seq = i + 1;
    const values = [seq, at, `a.${i % 6}`, `org_${i % 50}`, `user_${i % 5000}`, `doc_${i % 20000}`, JSON.stringify({ seq, metadata: { plan: "pro", request: i }, hash: "h".repeat(64), pad: "x".repeat(200) })];
    inserts.today.run(...values);
    inserts.keyed.run(...values);
    inserts[period].run(...values);
  }
  if (c % 1000 === 999) process.stderr.write(`\r${((c + 1) * C).toLocaleString("en-US")} events`);
}
db.exec("COMMIT; ANALYZE;");
process.stderr.write("\n");

const ORDER = "ORDER BY occurred_at DESC, seq DESC";
// A page: the walk's (key, occurred_at, seq) stopped at 51, then the page's rows by key, as event-query.ts does.
function list(table, index, where, limit = 51) {
  const key = table === "today" ? "row_id" : "seq";
  const walk = `SELECT ${key} AS k, occurred_at, seq FROM ${table} INDEXED BY ${table}_${index} WHERE project_id = 'p'${where ? ` AND ${where}` : ""} ${ORDER} LIMIT ${limit}`;
  return `SELECT body FROM ${table} WHERE ${table === "today" ? "row_id" : "project_id = 'p' AND seq"} IN (SELECT k FROM (${walk})) ${ORDER} LIMIT ${limit}`;
}
function periodList(index, where, limit = 51) {
  const walks = periodTables.map((t) => `SELECT * FROM (SELECT '${t}' AS t, seq, occurred_at FROM ${t} INDEXED BY ${t}_${index} WHERE project_id = 'p'${where ? ` AND ${where}` : ""} ${ORDER} LIMIT ${limit})`);
  const page = `SELECT t, seq, occurred_at FROM (${walks.join(" UNION ALL ")}) ${ORDER} LIMIT ${limit}`;
  // Each period's rows of the page, by key.
  return `WITH page AS MATERIALIZED (${page}) ` + periodTables.map((t) => `SELECT * FROM (SELECT body, occurred_at, seq FROM ${t} WHERE project_id = 'p' AND seq IN (SELECT seq FROM page WHERE t = '${t}'))`).join(" UNION ALL ") + ` ${ORDER}`;
}
const range = (table, lo, n) =>
  table === "today"
    ? `SELECT body FROM today INDEXED BY today_seq WHERE project_id = 'p' AND seq BETWEEN ${lo} AND ${lo + n - 1} ORDER BY seq`
    : `SELECT body FROM ${table} WHERE project_id = 'p' AND seq BETWEEN ${lo} AND ${lo + n - 1} ORDER BY seq`;
const mid = Math.floor(N / 2);
const cases = [
  ["no filter", "time", null],
  ["an organization (1 in 50)", "org", "organization = 'org_7'"],
  ["an actor (1 in 5,000)", "actor", "actor_id = 'user_77'"],
  ["an actor with no event", "actor", "actor_id = 'nobody'"],
  ["a document (1 in 20,000)", "target", "target_id = 'doc_77'"],
  ["an organization, a week's page deep", "org", `organization = 'org_7' AND (occurred_at, seq) < ('${new Date(t0 + spanMs / 2).toISOString()}', ${mid})`],
];
const time = (sql, rounds = 200) => {
  const stmt = db.prepare(sql);
  const rows = stmt.all().length;
  for (let i = 0; i < 20; i++) stmt.all();
  const ts = [];
  for (let i = 0; i < rounds; i++) {
    const t = performance.now();
    stmt.all();
    ts.push(performance.now() - t);
  }
  ts.sort((a, b) => a - b);
  return { rows, text: `${ts[Math.floor(rounds * 0.5)].toFixed(3)} / ${ts[Math.floor(rounds * 0.95)].toFixed(3)}` };
};
console.log(`${N.toLocaleString("en-US")} events, ${PERIODS} period tables; p50 / p95 ms`);
console.log("| read | today (rowid, seq index) | keyed (WITHOUT ROWID) | periods (keyed, a table a period) |\n|---|---|---|---|");
for (const [what, index, where] of cases) {
  const a = time(list("today", index, where)), b = time(list("keyed", index, where)), c = time(periodList(index, where));
  if (a.rows !== b.rows || a.rows !== c.rows) throw new Error(`${what}: ${a.rows} / ${b.rows} / ${c.rows} rows`);
  console.log(`| ${what}, a page of ${a.rows} | ${a.text} | ${b.text} | ${c.text} |`);
}
for (const n of [1, 2000]) {
  const a = time(range("today", mid, n)), b = time(range("keyed", mid, n));
  const inPeriod = periodTables.find((t) => db.prepare(`SELECT 1 FROM ${t} WHERE project_id = 'p' AND seq = ${mid}`).get());
  const c = time(range(inPeriod, mid, n));
  console.log(`| ${n === 1 ? "one event by seq" : `a seq range of ${n} (verify, export, archive)`} | ${a.text} | ${b.text} | ${c.text} |`);
}
const size = (t) => db.prepare(`SELECT sum(pgsize) AS b FROM dbstat WHERE name = '${t}' OR name LIKE '${t}\\_%' ESCAPE '\\'`).get()?.b;
try {
  console.log(`bytes an event, table and indexes: today ${(size("today") / N).toFixed(0)}, keyed ${(size("keyed") / N).toFixed(0)}`);
} catch {
  // dbstat is a compile-time option of SQLite; Node's may lack it.
}
db.close();
