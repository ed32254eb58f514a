// Keyed row ids without a rebuild (issue 38: -1 D1 row an event): a row written from the switch on has row_id =
// its project's number in the shard x 2^40 + its seq, so a read by seq finds it by row_id, and the (project_id, seq)
// index becomes partial over the rows written before (row_id < 2^40), which keep their entries until they are
// archived. Reads by seq then take both paths: the rows before the project's first keyed seq through the partial
// index, the rest by row_id. 1M events of one project (and one in ten of another between them), half written
// before the switch (LEGACY=0.5), against the same rows and the full index; each case reads the same answer. Not
// Witness code: run by hand, `N=1000000 npx node test/bench/keyed-rows-sqlite.mjs` (a few minutes; its file is
// removed at the end). Figures in the bench README's cost section.
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
const N = Number(process.env.N ?? 1_000_000), LEGACY = Number(process.env.LEGACY ?? 0.5);
const file = join(tmpdir(), `keyed-rows-${process.pid}.db`);
process.on("exit", () => rmSync(file, { force: true }));
const db = new DatabaseSync(file);
db.exec("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -2000;");
const cols = "project_id TEXT NOT NULL, seq INTEGER NOT NULL, occurred_at TEXT, actor_id TEXT, body TEXT";
db.exec(`CREATE TABLE today (row_id INTEGER PRIMARY KEY, ${cols}); CREATE UNIQUE INDEX today_seq ON today (project_id, seq);
CREATE INDEX today_actor ON today (project_id, actor_id, occurred_at, seq);
CREATE TABLE keyed (row_id INTEGER PRIMARY KEY, ${cols}); CREATE UNIQUE INDEX keyed_seq ON keyed (project_id, seq) WHERE row_id < 1099511627776;
CREATE INDEX keyed_actor ON keyed (project_id, actor_id, occurred_at, seq);
CREATE TABLE project_keys (project_id TEXT PRIMARY KEY, n INTEGER NOT NULL UNIQUE) WITHOUT ROWID;
INSERT INTO project_keys VALUES ('p', 3), ('q', 4);`);
const K = 3 * 2 ** 40, S = Math.floor(N * LEGACY) + 1; // seqs from S are keyed
const a = db.prepare("INSERT INTO today (project_id, seq, occurred_at, actor_id, body) VALUES (?, ?, ?, ?, ?)");
const bl = db.prepare("INSERT INTO keyed (project_id, seq, occurred_at, actor_id, body) VALUES (?, ?, ?, ?, ?)");
const bk = db.prepare("INSERT INTO keyed (row_id, project_id, seq, occurred_at, actor_id, body) VALUES (?, ?, ?, ?, ?, ?)");
db.exec("BEGIN");
for (let i = 1; i <= N; i++) {
  const v = ["p", i, new Date(1.79e12 + i * 1000).toISOString(), `user_${i % 5000}`, JSON.stringify({ i, pad: "x".repeat(300) })];
  a.run(...v);
  if (i < S) bl.run(...v); else bk.run(K + i, ...v);
  // another project's rows between, as a shared shard has
  if (i % 10 === 0) { const w = ["q", i / 10, v[2], "u", "{}"]; a.run(...w); if (i < S) bl.run(...w); else bk.run(4 * 2 ** 40 + i / 10, ...w); }
}
db.exec("COMMIT; ANALYZE");
const time = (sql, args = [], rounds = 300) => {
  const st = db.prepare(sql); const r = st.all(...args);
  for (let i = 0; i < 10; i++) st.all(...args);
  const ts = []; for (let i = 0; i < rounds; i++) { const t = performance.now(); st.all(...args); ts.push(performance.now() - t); }
  ts.sort((x, y) => x - y); return { r, text: `${ts[rounds >> 1].toFixed(3)} / ${ts[Math.floor(rounds * 0.95)].toFixed(3)}` };
};
const KEY = "((SELECT n FROM project_keys WHERE project_id = ?1) << 40)";
const LEG = "e.row_id < 1099511627776";
const cases = [
  ["a range of 2,000 (verify, export)", (lo) => [
    "SELECT seq, body FROM today e WHERE e.project_id = ?1 AND e.seq > ?2 AND e.seq <= ?2 + 2000 ORDER BY e.seq",
    `SELECT seq, body FROM (SELECT * FROM keyed e WHERE ${LEG} AND e.project_id = ?1 AND e.seq > ?2 AND e.seq <= ?2 + 2000 ORDER BY e.seq) UNION ALL SELECT seq, body FROM (SELECT * FROM keyed e WHERE e.row_id > ${KEY} + ?2 AND e.row_id <= ${KEY} + ?2 + 2000 ORDER BY e.row_id)`,
    `SELECT seq, body FROM keyed e WHERE (${LEG} AND e.project_id = ?1 AND e.seq > ?2 AND e.seq <= ?2 + 2000) OR (e.row_id > ${KEY} + ?2 AND e.row_id <= ${KEY} + ?2 + 2000) ORDER BY e.seq`,
  ]],
  ["the next 2,000 after a cursor (streams, feed)", (lo) => [
    "SELECT seq, body FROM today e WHERE e.project_id = ?1 AND e.seq > ?2 ORDER BY e.seq LIMIT 2000",
    `SELECT seq, body FROM (SELECT * FROM (SELECT * FROM keyed e WHERE ${LEG} AND e.project_id = ?1 AND e.seq > ?2 ORDER BY e.seq LIMIT 2000) UNION ALL SELECT * FROM (SELECT * FROM keyed e WHERE e.row_id > ${KEY} + ?2 AND e.row_id < ${KEY} + 1099511627776 ORDER BY e.row_id LIMIT 2000)) LIMIT 2000`,
    null,
  ]],
  ["one row by seq", (lo) => [
    "SELECT seq, body FROM today e WHERE e.project_id = ?1 AND e.seq = ?2",
    `SELECT seq, body FROM keyed e WHERE (${LEG} AND e.project_id = ?1 AND e.seq = ?2) OR e.row_id = ${KEY} + ?2`,
    null,
  ]],
  ["the newest seq", () => [
    "SELECT max(seq) AS m FROM today e WHERE e.project_id = ?1 AND ?2 IS NOT NULL",
    `SELECT coalesce((SELECT max(row_id) FROM keyed e WHERE e.row_id >= ${KEY} AND e.row_id < ${KEY} + 1099511627776) - ${KEY}, (SELECT max(seq) FROM keyed e WHERE ${LEG} AND e.project_id = ?1)) AS m WHERE ?2 IS NOT NULL`,
    null,
  ]],
];
console.log(`${N.toLocaleString("en-US")} events, seqs from ${S.toLocaleString("en-US")} keyed; p50 / p95 ms`);
console.log("| read | at | today (seq index) | keyed, UNION ALL of both paths | keyed, OR of both paths |\n|---|---|---|---|---|");
for (const [what, make] of cases) for (const [at, lo] of [["legacy", Math.floor(S / 2)], ["across the switch", S - 1000], ["keyed", Math.floor((S + N) / 2)]]) {
  const [x, y, z] = make(lo);
  const A = time(x, ["p", lo]), B = time(y, ["p", lo]), C = z ? time(z, ["p", lo]) : null;
  const same = JSON.stringify(A.r) === JSON.stringify(B.r) && (!C || JSON.stringify(A.r) === JSON.stringify(C.r));
  if (!same) throw new Error(`${what} at ${at}: the answers differ`);
  console.log(`| ${what} | ${at} | ${A.text} | ${B.text} | ${C ? C.text : "-"} |`);
}
const size = (t) => db.prepare(`SELECT sum(pgsize) AS b FROM dbstat WHERE name = '${t}' OR name LIKE '${t}\\_%' ESCAPE '\\'`).get()?.b;
try { console.log(`bytes, table and indexes: today ${size("today")}, keyed ${size("keyed")}`); } catch {}
