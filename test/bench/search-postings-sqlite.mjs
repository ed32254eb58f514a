// Lists by actor and by first target answered by the search index's group entries instead of an index entry
// each (issue 38: -2 D1 rows an event, the entries being one row per 16 events, already paid): a token per event's
// actor and target in its group's entry, a list walks the token's groups newest first and reads their rows. What
// decides it is verify, which would have to ask, of every event, that its group's entry holds both tokens (the index
// is contentless: nothing else shows what an entry holds). 1M events in groups of 16, in Node's SQLite, with and
// without the tokens. Not Witness code: run by hand, `N=1000000 npx node test/bench/search-postings-sqlite.mjs`
// (a few minutes; its file is removed at the end). Figures in the bench README's cost section.
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
const N = Number(process.env.N ?? 1_000_000), C = 100, G = 16;
const file = join(tmpdir(), `search-postings-${process.pid}.db`);
process.on("exit", () => rmSync(file, { force: true }));
const db = new DatabaseSync(file);
db.exec("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -2000;");
db.exec(`CREATE TABLE ev (row_id INTEGER PRIMARY KEY, project_id TEXT, seq INTEGER, occurred_at TEXT, action TEXT, organization TEXT, actor_id TEXT, target_id TEXT, body TEXT);
CREATE UNIQUE INDEX ev_seq ON ev (project_id, seq);
CREATE INDEX ev_actor ON ev (project_id, actor_id, occurred_at, seq);
CREATE INDEX ev_target ON ev (project_id, target_id, occurred_at, seq);
CREATE VIRTUAL TABLE fa USING fts5(words, content='', contentless_delete=1, tokenize='ascii', prefix='8 9');
CREATE VIRTUAL TABLE fb USING fts5(words, content='', contentless_delete=1, tokenize='ascii', prefix='8 9');`);
const SLOTS = "0123456789abcdef";
const tag = "k3x9q";
const h = (s) => { let x = 0x811c9dc5; for (let i = 0; i < s.length; i++) { x ^= s.charCodeAt(i); x = Math.imul(x, 0x01000193); } return (x >>> 0).toString(36); };
const atok = (a) => `${tag}xa${h(a)}`, ttok = (t) => `${tag}xt${h(t)}`;
const t0 = Date.parse("2026-10-31T00:00:00.000Z"), spanMs = 30 * 86_400_000;
const ins = db.prepare("INSERT INTO ev (row_id, project_id, seq, occurred_at, action, organization, actor_id, target_id, body) VALUES (?, 'p', ?, ?, ?, ?, ?, ?, ?)");
const insA = db.prepare("INSERT INTO fa (rowid, words) VALUES (?, ?)"), insB = db.prepare("INSERT INTO fb (rowid, words) VALUES (?, ?)");
let ta = 0, tb = 0;
db.exec("BEGIN");
let groupA = [], groupB = [], first = 1;
for (let i = 0; i < N; i++) {
  const seq = i + 1, at = new Date(t0 + Math.floor((Math.floor(i / C) * C * spanMs) / N)).toISOString();
  const action = `document.${["read", "shared", "created", "deleted", "updated", "moved"][i % 6]}`, actor = `user_${(i * 7919) % 5000}`, target = `doc_${(i * 104729) % 20000}`;
  ins.run(seq, seq, at, action, `org_${i % 50}`, actor, target, JSON.stringify({ seq, pad: "x".repeat(300) }));
  const slot = tag + SLOTS[(seq - first)];
  const w = ["document", action.split(".")[1], "ada", `lovelace${i % 97}`, "user", String((i * 7919) % 5000)].map((x) => slot + x).join(" ");
  groupA.push(w); groupB.push(`${w} ${atok(actor)} ${ttok(target)}`);
  if (groupA.length === G || i === N - 1) {
    let t = performance.now(); insA.run(first, groupA.join(" ")); ta += performance.now() - t;
    t = performance.now(); insB.run(first, groupB.join(" ")); tb += performance.now() - t;
    groupA = []; groupB = []; first = seq + 1;
    if ((i + 1) % (C * 1000) === 0) { db.exec("COMMIT; BEGIN"); process.stderr.write(`\r${(i + 1).toLocaleString("en-US")}`); }
  }
}
db.exec("COMMIT; ANALYZE");
process.stderr.write("\n");
console.log(`FTS insert: without tokens ${ta.toFixed(0)} ms, with ${tb.toFixed(0)} ms over ${N} events (${((tb - ta) * 1000 / N).toFixed(2)} µs an event more)`);
const time = (sql, rounds = 200, args = []) => {
  const st = db.prepare(sql); const rows = st.all(...args).length;
  for (let i = 0; i < 10; i++) st.all(...args);
  const ts = []; for (let i = 0; i < rounds; i++) { const t = performance.now(); st.all(...args); ts.push(performance.now() - t); }
  ts.sort((a, b) => a - b); return { rows, text: `${ts[rounds >> 1].toFixed(3)} / ${ts[Math.floor(rounds * 0.95)].toFixed(3)}` };
};
const ORDER = "ORDER BY occurred_at DESC, seq DESC";
const viaIndex = (col, v, idx) => `SELECT body FROM ev WHERE row_id IN (SELECT row_id FROM (SELECT row_id, occurred_at, seq FROM ev INDEXED BY ${idx} WHERE project_id = 'p' AND ${col} = '${v}' ${ORDER} LIMIT 51)) ${ORDER} LIMIT 51`;
const viaFts = (col, v, tok) => `WITH g AS MATERIALIZED (SELECT rowid AS k FROM fb WHERE fb MATCH '"${tok}"' ORDER BY rowid DESC LIMIT 51)
  SELECT e.body FROM g CROSS JOIN ev e ON e.row_id BETWEEN g.k AND g.k + ${G - 1} WHERE e.project_id = 'p' AND e.${col} = '${v}' ORDER BY e.row_id DESC LIMIT 51`;
console.log("| list | index entries | search groups |\n|---|---|---|");
for (const [what, col, v, idx, tok] of [
  ["actor 1 in 5,000", "actor_id", "user_77", "ev_actor", atok("user_77")],
  ["actor with no event", "actor_id", "nobody", "ev_actor", atok("nobody")],
  ["document 1 in 20,000", "target_id", "doc_77", "ev_target", ttok("doc_77")],
]) {
  const a = time(viaIndex(col, v, idx)), b = time(viaFts(col, v, tok));
  console.log(`| ${what} | ${a.text} (${a.rows}) | ${b.text} (${b.rows}) |`);
}
// Verify's check: each group's entry holds every token of its events' actors and targets (20,000 events mid-way).
const lo = N / 2 + 1 - ((N / 2) % G), rows = db.prepare("SELECT row_id, actor_id, target_id FROM ev WHERE row_id BETWEEN ? AND ? ORDER BY row_id").all(lo, lo + 19_999);
const groups = new Map();
for (const r of rows) {
  const k = r.row_id - ((r.row_id - 1) % G);
  if (!groups.has(k)) groups.set(k, new Set());
  groups.get(k).add(atok(r.actor_id)).add(ttok(r.target_id));
}
// CAST: node:sqlite binds a number as a REAL, and FTS5 then returns every match of the expression, whatever the rowid.
const oneGroup = db.prepare("SELECT count(*) AS n FROM fb WHERE fb MATCH ? AND rowid = CAST(? AS INTEGER)");
let t = performance.now(), ok = 0;
for (const [k, toks] of groups) ok += oneGroup.get([...toks].map((x) => `"${x}"`).join(" AND "), k).n;
let ms = performance.now() - t;
console.log(`verify, a group's tokens ANDed at its rowid: ${(ms * 1000 / rows.length).toFixed(2)} µs an event (${ok} of ${groups.size} groups hold theirs)`);
t = performance.now(); ok = 0; let n = 0;
for (const [k, toks] of [...groups].slice(0, 300)) for (const x of toks) { ok += oneGroup.get(`"${x}"`, k).n; n++; }
ms = performance.now() - t;
console.log(`verify, a token at a time: ${(ms * 1000 / (300 * G)).toFixed(2)} µs an event (${ok} of ${n} found)`);
// The same check done in SQL, one statement for the chunk (as verify's page query would).
const inSql = `SELECT count(*) AS bad FROM ev r WHERE r.row_id BETWEEN ? AND ? AND NOT EXISTS (SELECT 1 FROM fb WHERE fb MATCH ('"${tag}xa' || hx(r.actor_id) || '" AND "${tag}xt' || hx(r.target_id) || '"') AND fb.rowid = r.row_id - ((r.row_id - 1) % ${G}))`;
db.function("hx", h);
const st = db.prepare(inSql);
t = performance.now(); const bad = st.get(lo, lo + 19_999).bad; ms = performance.now() - t;
console.log(`verify in SQL, a row at a time: ${(ms * 1000 / 20000).toFixed(2)} µs an event (${bad} bad)`);
const plain = db.prepare("SELECT count(*) AS n, sum(length(body)) FROM ev r WHERE r.row_id BETWEEN ? AND ?");
t = performance.now(); plain.get(lo, lo + 19_999); ms = performance.now() - t;
console.log(`plain read of the same rows: ${(ms * 1000 / 20000).toFixed(2)} µs an event`);
