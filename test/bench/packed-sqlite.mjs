// The packed hot layout (DESIGN's Storage v2, issue 38's route past one row an event), measured before building
// it: one row per commit of 100 events (their JSON) with a Bloom summary of the commit's organizations and
// actors, 8,192 bits and 8 hashes, as the archive's segments have; a list by a filter walks the commits newest
// first, tests each summary in SQL (D1 runs no function of ours) and unpacks those that may match. Against it, a
// row per event and its index, as stored today, over the same events (sampleEvent's shape: 50 organizations, 5,000
// actors, in commits of 100). Not Witness code: a floor for a layout, in Node's SQLite, run by hand:
// `N=1000000 npx node test/bench/packed-sqlite.mjs` (about a minute). Figures in the bench README's cost section.
import { createHash } from "node:crypto";
import { DatabaseSync } from "node:sqlite";
const N = Number(process.env.N ?? 1_000_000), C = 100, BITS = 8192, K = 8;
const db = new DatabaseSync(":memory:");
db.exec(`CREATE TABLE packed (project_id TEXT NOT NULL, first_seq INTEGER NOT NULL, body TEXT NOT NULL, bloom TEXT NOT NULL, PRIMARY KEY (project_id, first_seq)) WITHOUT ROWID;
CREATE TABLE rows (row_id INTEGER PRIMARY KEY, project_id TEXT, seq INTEGER, occurred_at TEXT, organization TEXT, actor_id TEXT, body TEXT);
CREATE UNIQUE INDEX rows_seq ON rows (project_id, seq);
CREATE INDEX rows_org ON rows (project_id, organization, occurred_at, seq);
CREATE INDEX rows_actor ON rows (project_id, actor_id, occurred_at, seq);`);
const positions = (v) => { const h = createHash("sha256").update(v).digest(); return Array.from({ length: K }, (_, i) => h.readUInt32LE(i * 4) % BITS); };
const t0 = Date.parse("2026-11-01T00:00:00.000Z");
const insP = db.prepare("INSERT INTO packed VALUES ('p', ?, ?, ?)");
const insR = db.prepare("INSERT INTO rows (project_id, seq, occurred_at, organization, actor_id, body) VALUES ('p', ?, ?, ?, ?, ?)");
db.exec("BEGIN");
for (let c = 0; c < N / C; c++) {
  const at = new Date(t0 + c * 1000).toISOString();
  const bits = new Uint8Array(BITS / 8);
  const events = [];
  for (let k = 0; k < C; k++) {
    const i = c * C + k, seq = i + 1;
    const e = { seq, occurred_at: at, action: `a.${i % 6}`, organization: `org_${i % 50}`, actor: { id: `user_${i % 5000}`, name: `User ${i % 5000}`, email: `user${i % 5000}@acme.test` }, targets: [{ type: "document", id: `doc_${i % 20000}` }], metadata: { plan: "pro", request: i }, hash: "h".repeat(64) };
    events.push(e);
    for (const v of [`o${e.organization}`, `a${e.actor.id}`]) for (const b of positions(v)) bits[b >> 3] |= 1 << (b & 7);
    insR.run(seq, at, e.organization, e.actor.id, JSON.stringify(e));
  }
  insP.run(c * C + 1, JSON.stringify(events), Buffer.from(bits).toString("hex"));
}
db.exec("COMMIT");
// Hex text writes byte b as two digits, high nibble first: bit (b*8 + j) is in digit 2b + (j < 4 ? 1 : 0), bit j % 4.
const digitOf = (bit) => { const byte = bit >> 3, j = bit & 7; return { digit: 2 * byte + (j < 4 ? 1 : 0), mask: 1 << (j % 4) }; };
function packedList(field, value, limit) {
  const pos = positions(`${field === "organization" ? "o" : "a"}${value}`).map(digitOf);
  const tests = pos.map((p) => `(instr('0123456789abcdef', substr(s.bloom, ${p.digit + 1}, 1)) - 1) & ${p.mask}`).join(" AND ");
  const sql = `SELECT j.value AS e FROM (SELECT * FROM packed s WHERE s.project_id = 'p' AND ${tests} ORDER BY s.first_seq DESC) s CROSS JOIN json_each(s.body) j ` +
    `WHERE j.value ->> '$.${field === "organization" ? "organization" : "actor.id"}' = ? ORDER BY s.first_seq DESC, j.key DESC LIMIT ${limit}`;
  return db.prepare(sql).all(value);
}
function rowList(field, value, limit) {
  const idx = field === "organization" ? "rows_org" : "rows_actor";
  return db.prepare(`SELECT body FROM rows INDEXED BY ${idx} WHERE project_id = 'p' AND ${field === "organization" ? "organization" : "actor_id"} = ? ORDER BY occurred_at DESC, seq DESC LIMIT ${limit}`).all(value);
}
const time = (f) => { for (let i = 0; i < 5; i++) f(); const ts = []; for (let i = 0; i < 30; i++) { const t = performance.now(); f(); ts.push(performance.now() - t); } ts.sort((a, b) => a - b); return `p50 ${ts[15].toFixed(2)} ms, p95 ${ts[28].toFixed(2)} ms`; };
for (const [field, value, what] of [["organization", "org_7", "an organization (1 event in 50)"], ["actor_id", "user_77", "an actor (1 in 5,000)"], ["actor_id", "nobody", "an actor with no event"]]) {
  const a = rowList(field, value, 51).length, b = packedList(field, value, 51).length;
  console.log(`${what}: rows ${a}/${b}; a row each + index: ${time(() => rowList(field, value, 51))}; packed + summaries: ${time(() => packedList(field, value, 51))}`);
}
