// A commit's D1 statements on the two layouts of model/row-keys.ts, in Node's SQLite (issue 38): a keyed
// project, whose rows take no seq index entry (migration 0046), and one on the seq index, as a project made
// before keys is. The statements are the ledger's own (chain/event-insert.ts), for commits of COMMIT events
// (default 600) into a database each, alternating which goes first, 200 rounds (ROUNDS), the first 20 left out.
// It settles whether D1's own work at ingest differs between them. Run by hand:
// `npx node test/bench/commit-layouts-sqlite.mjs` (about a minute). Figures in the bench README's cost section.
import { randomBytes } from "node:crypto";
import { DatabaseSync } from "node:sqlite";
import { insertEventsStatements } from "../../src/chain/event-insert.ts";
import { idTag, mintEventId } from "../../src/model/event-id.ts";
import { KEY_SPAN } from "../../src/model/row-keys.ts";
import { applyMigrations, d1 } from "./sqlite-floor.mjs";

const COMMIT = Number(process.env.COMMIT ?? 600);
/** ROUNDS=1700: about 1M events a layout, where the tables and indexes are as deep as the read bench's. */
const ROUNDS = Number(process.env.ROUNDS ?? 200);
const hex = (n) => randomBytes(n).toString("hex");

function migrated() {
  const db = new DatabaseSync(":memory:");
  applyMigrations(db);
  return db;
}

/** sampleEvent's shape, live: an actor and a document each, 50 organizations, three actions, one address. */
const row = (seq, id, at, i) => ({
  row_id: null, id, project_id: "p", seq, action: ["doc.read", "doc.shared", "user.login"][i % 3], organization: `org_${i % 50}`, actor_id: `u${seq}`,
  actor_type: "user", actor_name: `User ${seq}`, actor_email: `u${seq}@x.test`, targets: JSON.stringify([{ id: `d${seq}`, name: null, type: "doc" }]),
  metadata: "{}", occurred_at: at, received_at: at, ip_address: "10.0.0.1", user_agent: "ua", pii_salt: null, pii_commitment: hex(32), hash: hex(32),
  prev_hash: null, signature: null, anonymized_at: null, changes: null, schema_version: null, schema_valid: null,
});

const layouts = { older: { db: migrated(), seq: 0, ms: [] }, keyed: { db: migrated(), seq: 0, ms: [] } };
layouts.keyed.db.prepare("INSERT INTO project_keys (project_id, n) VALUES ('p', 1)").run();
const tag = await idTag("p");
for (let round = 0; round < ROUNDS; round++) {
  for (const name of round % 2 ? ["keyed", "older"] : ["older", "keyed"]) {
    const l = layouts[name];
    const at = new Date(Date.UTC(2026, 10, 30) + round * 1000).toISOString();
    const rows = Array.from({ length: COMMIT }, (_, i) => row(l.seq + i + 1, mintEventId(at, tag), at, i));
    l.seq += COMMIT;
    const statements = insertEventsStatements(d1, rows, [{ token: hex(8), first: rows[0].seq, last: rows[COMMIT - 1].seq }]).map((s) => [l.db.prepare(s.sql), s.params]);
    const start = performance.now();
    l.db.exec("BEGIN");
    for (const [statement, params] of statements) statement.run(...params);
    l.db.exec("COMMIT");
    if (round >= 20) l.ms.push(performance.now() - start);
  }
}
for (const [name, l] of Object.entries(layouts)) {
  const late = l.ms.slice(-Math.floor(l.ms.length / 10)).sort((a, b) => a - b);
  const ms = [...l.ms].sort((a, b) => a - b);
  const p = (q) => ms[Math.floor(q * (ms.length - 1))].toFixed(2);
  const entries = l.db.prepare(`SELECT count(*) AS n FROM events INDEXED BY events_project_seq_idx WHERE row_id < ${KEY_SPAN}`).get().n;
  console.log(`${name.padEnd(6)} the last tenth of the rounds: p50 ${late[Math.floor(late.length / 2)].toFixed(2)} ms`);
  console.log(`${name.padEnd(6)} a commit of ${COMMIT}: p50 ${p(0.5)} ms, p95 ${p(0.95)} ms (${Math.round((COMMIT * 1000) / Number(p(0.5))).toLocaleString("en-US")} events/s); seq index entries ${entries.toLocaleString("en-US")} of ${l.seq.toLocaleString("en-US")} rows`);
}
