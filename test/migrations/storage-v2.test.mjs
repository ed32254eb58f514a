// Migrations 0029 to 0045 (issue 38, storage v2) over a shard that already holds events, in Node's
// own SQLite: the schema of migrations/ up to 0028, rows written as the ledger wrote them before
// (no id_indexed column), then the two migrations, then reads and writes of the code as it is now.
// Every event from before stays findable by id (through the now partial id index, which SQLite is
// seen to use) and by every filter; events written after take a span and no id index entry.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { after, before, describe, it } from "node:test";
import { COLUMNS, columnValues, insertEventsStatements } from "../../src/chain/event-insert.ts";
import { rowIndexing } from "../../src/model/row-indexing.ts";
import { idTag, mintEventId, tagOfId } from "../../src/model/event-id.ts";
import { sparseAddressSql } from "../../src/model/address-runs.ts";
import { sparseTypeSql } from "../../src/model/target-type-sets.ts";
import { eventsByIdStatement } from "../../src/model/event-lookup.ts";
import { MAX_STATEMENT_BYTES, selectEvents } from "../../src/model/event-query.ts";
import { indexText, searchExpression, searchTag } from "../../src/model/search-index.ts";
import { KEY_SPAN, rowsBySeq } from "../../src/model/row-keys.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const MIGRATIONS = join(ROOT, "migrations");
const dir = mkdtempSync(join(tmpdir(), "witness-storage-v2-"));
after(() => rmSync(dir, { recursive: true, force: true }));

function apply(db, file) {
  for (const statement of readFileSync(join(MIGRATIONS, file), "utf8").split("--> statement-breakpoint")) {
    if (statement.trim()) db.exec(statement);
  }
}

/** The migrations whose file names `keep` accepts, in order. */
function migrate(db, keep = () => true) {
  for (const file of readdirSync(MIGRATIONS).filter((f) => f.endsWith(".sql")).sort().filter(keep)) apply(db, file);
}

/** A row as the code of an earlier migration inserted it, with the id_indexed that code gave it. */
function insertAs(db, r, idIndexed) {
  const columns = Object.keys(r).filter((c) => c !== "row_id");
  db.prepare(`INSERT INTO events (${columns.join(", ")}, id_indexed) VALUES (${columns.map(() => "?").join(", ")}, ?)`).run(...columns.map((c) => r[c]), idIndexed);
}

/** A D1 stand-in for the statement builders: prepare/bind make {sql, params}. */
const d1 = { prepare: (sql) => ({ bind: (...params) => ({ sql, params }) }) };

/** Rows stored as the ledger's commit stores them now (chain/event-insert.ts), with its appends' names. */
function commit(db, rows, appends = []) {
  for (const s of insertEventsStatements(d1, rows, appends)) db.prepare(s.sql).run(...s.params);
}

const hex = (n) => randomBytes(n).toString("hex");
const PROJECT = "p-storage-v2";
const OTHER = "p-storage-v2-other";

/** A stored row as the chain has it (the values matter only for the reads below). */
function row(projectId, seq, id, receivedAt, fields = {}) {
  return {
    row_id: null, id, project_id: projectId, seq, action: "doc.viewed", organization: null, actor_id: null, actor_type: null,
    actor_name: null, actor_email: null, targets: "[]", metadata: "{}", occurred_at: receivedAt, received_at: receivedAt,
    ip_address: null, user_agent: null, pii_salt: null, pii_commitment: hex(32), hash: hex(32), prev_hash: null, signature: null,
    anonymized_at: null, changes: null, schema_version: null, schema_valid: null, ...fields,
  };
}

/** How the ledger inserted rows before migration 0029: the same columns, without id_indexed. */
function insertBefore(db, rows) {
  const columns = Object.keys(rows[0]).filter((c) => c !== "row_id");
  const insert = db.prepare(`INSERT INTO events (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`);
  for (const r of rows) insert.run(...columns.map((c) => r[c]));
}

const all = (db, { sql, params }) => db.prepare(sql).all(...params);
const plan = (db, { sql, params }) => db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params).map((r) => r.detail).join("\n");

/** The seqs of a selection in list order, read page by page of `size` as a client follows the cursor. */
function pages(db, sel, size, rowKey = null) {
  const out = [];
  for (let cursor = null; ; ) {
    const page = all(db, selectEvents(sel, { rowKey, columns: "e.seq, e.occurred_at", cursor, limit: size }));
    out.push(...page.map((r) => r.seq));
    if (page.length < size) return out;
    cursor = { occurredAt: page[size - 1].occurred_at, seq: page[size - 1].seq };
  }
}

describe("migrations 0029 and 0030 over a shard holding events", () => {
  const db = new DatabaseSync(join(dir, "shard.sqlite"));
  const before0029 = [];
  const after0029 = [];

  before(async () => {
    const files = readdirSync(MIGRATIONS).filter((f) => f.endsWith(".sql")).sort();
    for (const file of files.filter((f) => f < "0029")) apply(db, file);
    // Ids as the ledger minted them before located ids (random) and after (located), both before 0029.
    const t0 = "2026-11-20T10:00:00.000Z";
    before0029.push(
      row(PROJECT, 1, crypto.randomUUID(), t0, { organization: "org_a", actor_id: "u_1", ip_address: "10.0.0.1" }),
      row(PROJECT, 2, mintEventId(t0, await idTag(PROJECT)), t0, { actor_id: "u_2" }),
      row(OTHER, 1, mintEventId(t0, await idTag(OTHER)), t0, { organization: "org_a" }),
    );
    insertBefore(db, before0029);
    for (const file of files.filter((f) => f >= "0029")) apply(db, file);
    // After: the ledger's own statements.
    const t1 = "2026-11-28T10:00:00.000Z";
    const tag = await idTag(PROJECT);
    after0029.push(
      row(PROJECT, 3, mintEventId(t1, tag), t1, { organization: "org_a", actor_id: "u_1", ip_address: "10.0.0.1" }),
      row(PROJECT, 4, mintEventId(t1, tag), t1),
    );
    commit(db, after0029);
  });

  it("moves every existing event into the partial id index and drops the full one", () => {
    const indexes = db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' ORDER BY name").all().map((r) => r.name);
    assert.ok(!indexes.includes("events_id_unique"));
    assert.ok(indexes.includes("events_legacy_id_unique"));
    const indexed = db.prepare("SELECT count(*) AS n FROM events INDEXED BY events_legacy_id_unique WHERE id_indexed = 1 AND id IS NOT NULL").get().n;
    assert.equal(indexed, before0029.length);
    assert.deepEqual(db.prepare("SELECT seq FROM events WHERE project_id = ? AND id_indexed = 0 ORDER BY seq").all(PROJECT).map((r) => r.seq), [3, 4]);
    assert.deepEqual(db.prepare("SELECT * FROM commit_spans").all().map((r) => ({ ...r })), [
      { received_at: "2026-11-28T10:00:00.000Z", project_id: PROJECT, first_seq: 3, last_seq: 4, appends: null, live: 1 },
    ]);
  });

  it("finds every event by id, before and after, in its project and from a public receipt, and no other project's", () => {
    for (const r of [...before0029, ...after0029]) {
      assert.deepEqual(all(db, eventsByIdStatement("e.seq, e.project_id", [r.id], r.project_id)).map((x) => ({ ...x })), [{ seq: r.seq, project_id: r.project_id }]);
      assert.deepEqual(all(db, eventsByIdStatement("e.seq", [r.id], null)).map((x) => x.seq), [r.seq]);
    }
    assert.deepEqual(all(db, eventsByIdStatement("e.seq", [before0029[2].id], PROJECT)), []);
    const replay = all(db, eventsByIdStatement("e.seq", [...before0029, ...after0029].filter((r) => r.project_id === PROJECT).map((r) => r.id), PROJECT));
    assert.deepEqual(replay.map((x) => x.seq).sort(), [1, 2, 3, 4]);
  });

  it("reads through the partial id index and the spans, never a scan of the events", () => {
    const text = plan(db, eventsByIdStatement("e.seq", [after0029[0].id], PROJECT));
    assert.match(text, /USING INDEX events_legacy_id_unique/);
    assert.match(text, /SEARCH c USING PRIMARY KEY \(received_at=\? AND project_id=\?\)/);
    assert.match(text, /USING INDEX events_project_seq_idx \(project_id=\? AND seq>\? AND seq<\?\)/);
    assert.doesNotMatch(text, /SCAN e\b|SCAN s\b/);
  });

  it("answers every filter from the partial filter indexes, old events included", () => {
    const base = { projectId: PROJECT, organization: null, actorId: null, ipAddress: null, dateFrom: null, dateTo: null, actions: null, exclude: [] };
    const seqs = (sel) => all(db, selectEvents({ ...base, ...sel }, { rowKey: null, columns: "e.seq", cursor: null, limit: 50 })).map((r) => r.seq).sort();
    assert.deepEqual(seqs({ organization: "org_a" }), [1, 3]);
    assert.deepEqual(seqs({ actorId: "u_1" }), [1, 3]);
    assert.deepEqual(seqs({ actorId: "u_2" }), [2]);
    assert.deepEqual(seqs({ ipAddress: "10.0.0.1" }), [1, 3]);
    assert.deepEqual(seqs({ organization: "org_a", actions: ["doc.viewed", "doc.shared"] }), [1, 3]);
    assert.deepEqual(seqs({}), [1, 2, 3, 4]);
    const text = plan(db, selectEvents({ ...base, organization: "org_a" }, { rowKey: null, columns: "e.seq", cursor: null, limit: 50 }));
    assert.match(text, /USING (COVERING )?INDEX events_org_time_idx \(project_id=\? AND organization=\?\)/);
  });

  it("drops a span with the last event of its range, whatever order its events go in", () => {
    db.prepare("DELETE FROM events WHERE project_id = ? AND seq = 4").run(PROJECT);
    assert.equal(db.prepare("SELECT count(*) AS n FROM commit_spans").get().n, 1);
    assert.deepEqual(all(db, eventsByIdStatement("e.seq", [after0029[0].id], PROJECT)).map((x) => x.seq), [3]);
    db.prepare("DELETE FROM events WHERE project_id = ? AND seq = 3").run(PROJECT);
    assert.equal(db.prepare("SELECT count(*) AS n FROM commit_spans").get().n, 0);
  });
});

describe("migration 0031 over a shard whose events have a search entry each", () => {
  const db = new DatabaseSync(join(dir, "search.sqlite"));
  const t0 = "2026-11-20T10:00:00.000Z";
  const t1 = "2026-11-28T10:00:00.000Z";
  const old = [1, 2, 3].map((seq) => row(PROJECT, seq, crypto.randomUUID(), t0, { actor_name: seq === 2 ? "Pat Marker" : "Sam Other", actor_id: `acct${seq}z` }));
  // A group's worth: 16 events, its first at the top of its block (lead 15), the others from its key on.
  const fresh = Array.from({ length: 16 }, (_, i) => i + 4).map((seq) => row(PROJECT, seq, crypto.randomUUID(), t1, { actor_name: seq === 6 ? "Pat Marker" : "Sam Other", actor_id: `acct${seq}z` }));
  const base = { projectId: PROJECT, organization: null, actorId: null, ipAddress: null, dateFrom: null, dateTo: null, actions: null, exclude: [] };
  const found = (terms) =>
    all(db, selectEvents(base, { rowKey: null, columns: "e.seq", cursor: null, limit: 50, match: { expression: searchExpression(terms, PROJECT), terms } })).map((r) => r.seq);
  const entries = () => db.prepare("SELECT count(*) AS n FROM events_search WHERE events_search MATCH ?").get(searchExpression(["doc"], PROJECT)).n;

  before(() => {
    const files = readdirSync(MIGRATIONS).filter((f) => f.endsWith(".sql")).sort();
    for (const file of files.filter((f) => f < "0031")) apply(db, file);
    // As the ledger wrote them before: the rows (no search columns yet), then an entry each from their text.
    const legacy = COLUMNS.filter((c) => !["search_lead", "search_words", "append_name", "ip_run", "type_sets", "time_in_span", "action_in_set", "org_in_set"].includes(c));
    const insert = db.prepare(`INSERT INTO events (${legacy.join(", ")}) VALUES (${legacy.map(() => "?").join(", ")})`);
    for (const [i, r] of old.entries()) {
      const values = columnValues(r, rowIndexing(old)[i]);
      insert.run(...legacy.map((c) => values[COLUMNS.indexOf(c)]));
    }
    const entry = db.prepare("INSERT INTO events_search (rowid, words) SELECT row_id, ? FROM events WHERE project_id = ? AND seq = ?");
    for (const row of old) entry.run(indexText(searchTag(PROJECT), row), PROJECT, row.seq);
    // 0031, and the later ones the code that writes the fresh rows below needs (0036's append_name).
    for (const file of files.filter((f) => f >= "0031")) apply(db, file);
    commit(db, fresh);
  });

  it("keeps the old events' own entries and gives a new commit one entry for its group", () => {
    assert.deepEqual(db.prepare("SELECT seq, search_lead AS lead, search_words IS NULL AS legacy FROM events ORDER BY seq").all().map((r) => ({ ...r })), [
      { seq: 1, lead: 0, legacy: 1 }, { seq: 2, lead: 0, legacy: 1 }, { seq: 3, lead: 0, legacy: 1 },
      { seq: 4, lead: 15, legacy: 0 }, ...Array.from({ length: 15 }, (_, i) => ({ seq: i + 5, lead: i, legacy: 0 })),
    ]);
    // One key for the group: its events at key..key+15.
    const keys = db.prepare("SELECT DISTINCT row_id - search_lead AS k, max(row_id) - min(row_id) AS span FROM events WHERE seq >= 4 GROUP BY 1").all();
    assert.deepEqual(keys.map((r) => r.span), [15]);
    assert.equal(entries(), 4);
  });

  it("finds exactly the events holding every term, old and new", () => {
    assert.deepEqual(found(["marker"]), [6, 2]);
    assert.deepEqual(found(["pat", "acct6z"]), [6]);
    assert.deepEqual(found(["acct5z"]), [5]);
    assert.deepEqual(found(["pat", "acct5z"]), []);
    assert.deepEqual(found(["sam"]), [19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 5, 4, 3, 1]);
  });

  it("drops an old event's entry with it, and a group's with the last of its events", () => {
    db.prepare("DELETE FROM events WHERE project_id = ? AND seq IN (2, 4, 5)").run(PROJECT);
    assert.equal(entries(), 3);
    assert.deepEqual(found(["sam"]), [19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 3, 1]);
    db.prepare("DELETE FROM events WHERE project_id = ? AND seq >= 6").run(PROJECT);
    assert.equal(entries(), 2);
    db.exec("INSERT INTO events_search (events_search, rank) VALUES ('integrity-check', 0)");
  });
});

describe("migrations 0033 and 0035 over a shard whose events have a target row each", () => {
  const db = new DatabaseSync(join(dir, "targets.sqlite"));
  const t0 = "2026-11-20T10:00:00.000Z";
  const t1 = "2026-11-28T10:00:00.000Z";
  const doc = (id) => JSON.stringify([{ id, name: null, type: "doc" }]);
  const old = [
    row(PROJECT, 1, crypto.randomUUID(), t0, { targets: doc("d1") }),
    row(PROJECT, 2, crypto.randomUUID(), t0, { targets: JSON.stringify([{ id: "u1", name: null, type: "user" }, { id: "d1", name: null, type: "doc" }]) }),
    row(PROJECT, 3, crypto.randomUUID(), t0),
  ];
  const three = JSON.stringify([{ id: "d3", name: null, type: "doc" }, { id: "u2", name: null, type: "user" }, { id: "t1", name: null, type: "team" }]);
  const fresh = [
    row(PROJECT, 4, crypto.randomUUID(), t1, { targets: doc("d1") }),
    row(PROJECT, 5, crypto.randomUUID(), t1, { targets: doc("d2") }),
    row(PROJECT, 6, crypto.randomUUID(), t1, { targets: three }),
  ];
  const base = { projectId: PROJECT, organization: null, actorId: null, ipAddress: null, dateFrom: null, dateTo: null, actions: null, exclude: [] };
  const seqs = (sel) => all(db, selectEvents({ ...base, ...sel }, { rowKey: null, columns: "e.seq", cursor: null, limit: 50 })).map((r) => r.seq);
  const targetRows = () => db.prepare("SELECT seq, type, id FROM event_targets ORDER BY seq, type").all().map((r) => ({ ...r }));

  before(() => {
    const files = readdirSync(MIGRATIONS).filter((f) => f.endsWith(".sql")).sort();
    for (const file of files.filter((f) => f < "0033")) apply(db, file);
    // As the ledger wrote them before 0033: event_targets' triggers take every target.
    insertBefore(db, old);
    for (const file of files.filter((f) => f >= "0033")) apply(db, file);
    commit(db, fresh);
  });

  it("builds the indexes over the events already stored, and keeps only targets past the second as rows from then on", () => {
    assert.deepEqual(targetRows(), [
      { seq: 1, type: "doc", id: "d1" }, { seq: 2, type: "doc", id: "d1" }, { seq: 2, type: "user", id: "u1" }, { seq: 6, type: "team", id: "t1" },
    ]);
    // The new commit's three first targets are of one type: a set (migration 0039), no type index entry each.
    const firsts = db.prepare("SELECT count(*) AS n FROM events INDEXED BY events_first_target_type_idx WHERE project_id = ? AND targets <> '[]' AND (type_sets & 1) = 0 AND (targets ->> '$[0].type') IS NOT NULL").get(PROJECT).n;
    assert.equal(firsts, 2);
    assert.deepEqual(db.prepare("SELECT at, type, first_seq, last_seq FROM target_type_sets").all().map((r) => ({ ...r })), [{ at: 0, type: "doc", first_seq: 4, last_seq: 6 }]);
    const seconds = db.prepare("SELECT count(*) AS n FROM events INDEXED BY events_second_target_type_idx WHERE project_id = ? AND json_array_length(targets) > 1 AND (type_sets & 2) = 0 AND (targets ->> '$[1].type') IS NOT NULL").get(PROJECT).n;
    assert.equal(seconds, 2);
  });

  it("finds every event by its targets once, old and new", () => {
    assert.deepEqual(seqs({ targetType: "doc", targetId: "d1" }), [4, 2, 1]);
    assert.deepEqual(seqs({ targetType: "doc" }), [6, 5, 4, 2, 1]);
    assert.deepEqual(seqs({ targetType: "user" }), [6, 2]);
    assert.deepEqual(seqs({ targetType: "user", targetId: "u1", actorId: null, organization: null }), [2]);
    assert.deepEqual(seqs({ targetType: "user", targetId: "u2" }), [6]);
    assert.deepEqual(seqs({ targetType: "team" }), [6]);
  });

  it("drops the old rows with their events", () => {
    db.prepare("DELETE FROM events WHERE project_id = ? AND seq <= 2").run(PROJECT);
    assert.deepEqual(targetRows(), [{ seq: 6, type: "team", id: "t1" }]);
    assert.deepEqual(seqs({ targetType: "doc" }), [6, 5, 4]);
  });
});

describe("migration 0036 over a shard whose lone commits have a span each", () => {
  const db = new DatabaseSync(join(dir, "lone.sqlite"));
  const t0 = "2026-11-27T10:00:00.000Z";
  const t1 = "2026-11-29T10:00:00.000Z";
  const t2 = "2026-11-29T10:00:01.000Z";
  let old;
  let lone;
  let pair;

  before(async () => {
    migrate(db, (f) => f < "0036");
    const tag = await idTag(PROJECT);
    // As the ledger wrote a commit of one event before 0036: its row found by a span, which carries its append's name.
    old = row(PROJECT, 1, mintEventId(t0, tag), t0);
    insertAs(db, old, 0);
    db.prepare("INSERT INTO commit_spans (received_at, project_id, first_seq, last_seq, appends) VALUES (?, ?, 1, 1, ?)").run(t0, PROJECT, JSON.stringify([["old-name", 1, 1]]));
    migrate(db, (f) => f >= "0036");
    // Backfilled (sent with an occurred_at of its own): a lone live row is found at its instant instead (0037, below).
    lone = row(PROJECT, 2, mintEventId(t1, tag), t1, { occurred_at: t0 });
    commit(db, [lone], [{ token: "lone-name", first: 2, last: 2 }]);
    pair = [3, 4].map((seq) => row(PROJECT, seq, mintEventId(t2, tag), t2));
    commit(db, pair, [{ token: "pair-name", first: 3, last: 4 }]);
  });

  it("gives a lone event its id index entry and its append's name, and a commit of two a span that names it", () => {
    const rows = db.prepare("SELECT seq, id_indexed, append_name FROM events WHERE project_id = ? ORDER BY seq").all(PROJECT).map((r) => ({ ...r }));
    assert.deepEqual(rows, [
      { seq: 1, id_indexed: 0, append_name: null },
      { seq: 2, id_indexed: 1, append_name: "lone-name" },
      { seq: 3, id_indexed: 0, append_name: null },
      { seq: 4, id_indexed: 0, append_name: null },
    ]);
    const spans = db.prepare("SELECT first_seq, last_seq, appends FROM commit_spans ORDER BY first_seq").all().map((r) => ({ ...r }));
    assert.deepEqual(spans, [
      { first_seq: 1, last_seq: 1, appends: JSON.stringify([["old-name", 1, 1]]) },
      { first_seq: 3, last_seq: 4, appends: JSON.stringify([["pair-name", 3, 4]]) },
    ]);
  });

  it("finds every event by id, the old lone one through its span and the new one through the id index", () => {
    for (const r of [old, lone, ...pair]) assert.deepEqual(all(db, eventsByIdStatement("e.seq", [r.id], PROJECT)).map((x) => x.seq), [r.seq]);
  });

  it("refuses a lone row naming an append its worker gave up on, and nothing of its commit is stored", () => {
    db.prepare("INSERT INTO given_up_appends (token, given_up_at) VALUES ('late-name', ?)").run(t2);
    const late = row(PROJECT, 5, mintEventId("2026-11-29T10:00:02.000Z", tagOfId(lone.id)), "2026-11-29T10:00:02.000Z");
    const statements = insertEventsStatements(d1, [late], [{ token: "late-name", first: 5, last: 5 }]);
    db.exec("BEGIN");
    assert.throws(() => {
      for (const s of statements) db.prepare(s.sql).run(...s.params);
    }, /gave up on; nothing of it was stored/);
    db.exec("ROLLBACK");
    assert.equal(db.prepare("SELECT count(*) AS n FROM events WHERE project_id = ? AND seq = 5").get(PROJECT).n, 0);
  });
});

describe("migration 0037: a lone live event is found at its id's instant, with no id index entry", () => {
  const db = new DatabaseSync(join(dir, "instant.sqlite"));
  const t1 = "2026-11-29T11:00:00.000Z";
  const t2 = "2026-11-29T11:00:01.000Z";
  let before0037;
  let live;
  let backfilled;
  let elsewhere;

  before(async () => {
    migrate(db, (f) => f < "0037");
    const tag = await idTag(PROJECT);
    // As the code before 0037 wrote a lone live row: its id index entry.
    before0037 = row(PROJECT, 1, mintEventId(t1, tag), t1);
    insertAs(db, before0037, 1);
    migrate(db, (f) => f >= "0037");
    live = row(PROJECT, 2, mintEventId(t2, tag), t2);
    commit(db, [live], [{ token: "live-name", first: 2, last: 2 }]);
    // Sent later with an occurred_at that is the live row's instant: the time index holds both there.
    backfilled = row(PROJECT, 3, mintEventId("2026-11-29T11:00:02.000Z", tag), "2026-11-29T11:00:02.000Z", { occurred_at: t2 });
    commit(db, [backfilled]);
    // Another project's lone live row at the same instant.
    elsewhere = row(OTHER, 1, mintEventId(t2, await idTag(OTHER)), t2);
    commit(db, [elsewhere]);
  });

  it("writes the live row with no id index entry and no span, its append's name on it, and its project's tag once", () => {
    const rows = db.prepare("SELECT project_id, seq, id_indexed, append_name FROM events ORDER BY project_id, seq").all().map((r) => ({ ...r }));
    assert.deepEqual(rows, [
      { project_id: PROJECT, seq: 1, id_indexed: 1, append_name: null },
      { project_id: PROJECT, seq: 2, id_indexed: 2, append_name: "live-name" },
      { project_id: PROJECT, seq: 3, id_indexed: 1, append_name: null },
      { project_id: OTHER, seq: 1, id_indexed: 2, append_name: null },
    ]);
    assert.equal(db.prepare("SELECT count(*) AS n FROM events INDEXED BY events_legacy_id_unique WHERE id_indexed = 1 AND id = ?").get(live.id).n, 0);
    assert.equal(db.prepare("SELECT count(*) AS n FROM commit_spans").get().n, 0);
    const tags = db.prepare("SELECT tag, project_id FROM project_tags ORDER BY project_id").all().map((r) => ({ ...r }));
    assert.deepEqual(tags, [
      { tag: tagOfId(live.id), project_id: PROJECT },
      { tag: tagOfId(elsewhere.id), project_id: OTHER },
    ]);
  });

  it("finds each event by id in its project and from a public receipt, and not in another project", () => {
    for (const r of [before0037, live, backfilled, elsewhere]) {
      assert.deepEqual(all(db, eventsByIdStatement("e.project_id, e.seq", [r.id], r.project_id)).map((x) => ({ ...x })), [{ project_id: r.project_id, seq: r.seq }]);
      assert.deepEqual(all(db, eventsByIdStatement("e.project_id, e.seq", [r.id], null)).map((x) => ({ ...x })), [{ project_id: r.project_id, seq: r.seq }]);
    }
    assert.deepEqual(all(db, eventsByIdStatement("e.seq", [live.id], OTHER)), []);
    assert.deepEqual(all(db, eventsByIdStatement("e.seq", [elsewhere.id], PROJECT)), []);
  });

  it("still finds a lone live row whose occurred_at a database writer changed, by a search of its received_at", async () => {
    const db2 = new DatabaseSync(join(dir, "instant-altered.sqlite"));
    migrate(db2);
    const tag = await idTag(PROJECT);
    const start = Date.parse("2026-11-29T12:00:00.000Z");
    const rows = [];
    for (let seq = 1; seq <= 300; seq++) {
      const at = new Date(start + seq * 7).toISOString();
      // Every fifth a commit of two (a span), the rest lone and live.
      const committed = seq % 5 === 0 ? [row(PROJECT, seq, mintEventId(at, tag), at), row(PROJECT, ++seq, mintEventId(at, tag), at)] : [row(PROJECT, seq, mintEventId(at, tag), at)];
      commit(db2, committed);
      rows.push(...committed);
    }
    const lone = rows.filter((r) => db2.prepare("SELECT id_indexed FROM events WHERE id = ?").get(r.id).id_indexed === 2);
    assert.ok(lone.length > 150);
    // Holes in seq (retention purged by rule), and the occurred_at of every seventh lone row changed.
    db2.prepare("DELETE FROM events WHERE project_id = ? AND seq % 11 = 0").run(PROJECT);
    const altered = lone.filter((r, i) => i % 7 === 0 && r.seq % 11 !== 0);
    for (const r of altered) db2.prepare("UPDATE events SET occurred_at = '2020-01-01T00:00:00.000Z' WHERE id = ?").run(r.id);
    for (const r of rows.filter((x) => x.seq % 11 !== 0)) {
      for (const projectId of [PROJECT, null]) {
        assert.deepEqual(all(db2, eventsByIdStatement("e.seq", [r.id], projectId)).map((x) => x.seq), [r.seq], `seq ${r.seq}`);
      }
    }
    for (const r of rows.filter((x) => x.seq % 11 === 0)) assert.deepEqual(all(db2, eventsByIdStatement("e.seq", [r.id], PROJECT)), []);
    assert.deepEqual(all(db2, eventsByIdStatement("e.seq", [altered[0].id], OTHER)), []);
    db2.close();
  });

  it("reads the time index at the id's instant, never a scan of the events", () => {
    for (const projectId of [PROJECT, null]) {
      const detail = plan(db, eventsByIdStatement("e.seq", [live.id], projectId));
      assert.match(detail, /events_project_time_idx \(project_id=\? AND occurred_at=\?\)/);
      assert.doesNotMatch(detail, /SCAN (e|s)\b(?! USING)/);
    }
  });
});

describe("migration 0038: a request's events are one address run, with no index entry each", () => {
  const db = new DatabaseSync(join(dir, "address.sqlite"));
  const A = "203.0.113.8";
  const B = "198.51.100.3";
  const at = (s) => `2026-11-29T12:00:${String(s).padStart(2, "0")}.000Z`;
  const seqs = (rows) => rows.map((r) => r.seq);
  const run = (rows) => {
    commit(db, rows);
  };
  const sel = (ip) => ({ projectId: PROJECT, organization: null, actorId: null, ipAddress: ip, dateFrom: null, dateTo: null, actions: null, exclude: [] });
  /** Every event of the address in list order, page by page. */
  const walk = (ip, size = 3) => pages(db, sel(ip), size);
  const sparse = (ip, limit) => db.prepare(`SELECT ${sparseAddressSql("?1", null, "?2", "?3", true)} AS s`).get(PROJECT, ip, limit).s;
  const expected = (ip) =>
    seqs(db.prepare("SELECT seq FROM events WHERE project_id = ? AND ip_address = ? ORDER BY occurred_at DESC, seq DESC").all(PROJECT, ip));

  before(async () => {
    migrate(db, (f) => f < "0038");
    const tag = await idTag(PROJECT);
    // As the code before 0038 wrote them: an index entry each, whatever their request.
    for (let seq = 1; seq <= 4; seq++) insertAs(db, row(PROJECT, seq, mintEventId(at(seq), tag), at(seq), { ip_address: A, occurred_at: at(60 - seq * 7) }), 0);
    migrate(db, (f) => f >= "0038");
    const t = at(20);
    // A batch from A (occurred_at interleaving the old rows'), a lone row from A, a batch from B (backdated too: every
    // row is in the time index, which holds the address).
    commit(db, Array.from({ length: 5 }, (_, i) => row(PROJECT, 5 + i, mintEventId(t, tag), t, { ip_address: A, occurred_at: at(57 - i * 9) })));
    commit(db, [row(PROJECT, 10, mintEventId(at(21), tag), at(21), { ip_address: A })]);
    commit(db, Array.from({ length: 3 }, (_, i) => row(PROJECT, 11 + i, mintEventId(at(22), tag), at(22), { ip_address: B, occurred_at: at(40 + i) })));
  });

  it("keeps the old rows in the rebuilt index and writes one run for each batch, whose rows take no entry", () => {
    const entries = db.prepare("SELECT seq FROM events INDEXED BY events_ip_time_idx WHERE project_id = ? AND ip_address = ? AND ip_run = 0 ORDER BY seq").all(PROJECT, A);
    assert.deepEqual(seqs(entries), [1, 2, 3, 4, 10]);
    const runs = db.prepare("SELECT ip, first_seq, last_seq FROM ip_runs WHERE project_id = ? ORDER BY first_seq").all(PROJECT).map((r) => ({ ...r }));
    assert.deepEqual(runs, [{ ip: A, first_seq: 5, last_seq: 9 }, { ip: B, first_seq: 11, last_seq: 13 }]);
  });

  it("finds every event of an address, old and new, in list order, whether its runs are few or many", () => {
    assert.equal(expected(A).length, 10);
    // A's 5 run events among 13: pages of 3 walk the time index (9 x 5 x 5 > 3 x 13), pages of 20 read the run, as a
    // page of every row does not (9 x 5 x 5 > 13 x 13).
    assert.deepEqual([sparse(A, 3), sparse(A, 20), sparse(A, -1)], [0, 1, 0]);
    assert.deepEqual(walk(A), expected(A));
    assert.deepEqual(walk(A, 20), expected(A));
    assert.deepEqual(walk(B), expected(B));
    // Enough runs to count as common (covering seqs the project does not have): the walk of the time index finds the same.
    const fake = db.prepare("INSERT INTO ip_runs (project_id, ip, first_seq, last_seq) VALUES (?, ?, ?, ?)");
    for (let i = 0; i < 2_000; i++) fake.run(PROJECT, A, 1_000_000 + 2 * i, 1_000_000 + 2 * i);
    assert.deepEqual(walk(A), expected(A));
    assert.equal(sparse(A, 20), 0);
    assert.deepEqual(walk(A, 20), expected(A));
    db.prepare("DELETE FROM ip_runs WHERE first_seq >= 1000000").run();
    // A project with live spans (migration 0040): their rows have no time index entry, so the walk that checks each
    // row looks each one up, and pages of 3 read the run (9 x 5 x 5 <= 3 x 13 x 15).
    db.prepare("INSERT INTO commit_spans (received_at, project_id, first_seq, last_seq, live) VALUES (?, ?, 1000, 1001, 1)").run(at(59), PROJECT);
    assert.equal(sparse(A, 3), 1);
    assert.deepEqual(walk(A), expected(A));
    db.prepare("DELETE FROM commit_spans WHERE first_seq = 1000").run();
  });

  it("drops a run with the last of its rows that holds the address, deleted in any order or scrubbed", () => {
    const runsOf = (ip) => db.prepare("SELECT count(*) AS n FROM ip_runs WHERE project_id = ? AND ip = ?").get(PROJECT, ip).n;
    const erase = db.prepare("UPDATE events SET ip_address = NULL WHERE project_id = ? AND seq = ?");
    const drop = db.prepare("DELETE FROM events WHERE project_id = ? AND seq = ?");
    for (const seq of [7, 5]) drop.run(PROJECT, seq);
    erase.run(PROJECT, 9);
    assert.equal(runsOf(A), 1);
    drop.run(PROJECT, 6);
    assert.equal(runsOf(A), 1);
    drop.run(PROJECT, 8);
    assert.equal(runsOf(A), 0);
    for (const seq of [12, 11]) erase.run(PROJECT, seq);
    assert.equal(runsOf(B), 1);
    erase.run(PROJECT, 13);
    assert.equal(runsOf(B), 0);
    // Two runs over the same rows (a shard copy that ran again over part of a run): each goes with its last row.
    assert.equal(db.prepare("SELECT count(*) AS n FROM ip_runs").get().n, 0);
    const t = at(30);
    commit(db, Array.from({ length: 6 }, (_, i) => row(PROJECT, 20 + i, hex(16), t, { ip_address: A })));
    db.prepare("INSERT INTO ip_runs (project_id, ip, first_seq, last_seq) VALUES (?, ?, 20, 22)").run(PROJECT, A);
    for (const seq of [23, 24, 25, 21, 20]) drop.run(PROJECT, seq);
    assert.equal(runsOf(A), 2);
    drop.run(PROJECT, 22);
    assert.equal(runsOf(A), 0);
    // A lone row's entry goes with it, as before: nothing of the address is left but the old rows'.
    drop.run(PROJECT, 10);
    assert.deepEqual(expected(A).sort(), [1, 2, 3, 4]);
    assert.deepEqual(walk(A), expected(A));
  });
});

describe("migration 0039: a batch's rows of one target type are one set, with no type index entry each", () => {
  const db = new DatabaseSync(join(dir, "types.sqlite"));
  const at = (s) => `2026-11-29T13:00:${String(s).padStart(2, "0")}.000Z`;
  const seqs = (rows) => rows.map((r) => r.seq);
  const targets = (...types) => JSON.stringify(types.map((type, i) => ({ id: `${type}_${i}`, name: null, type })));
  const sel = (type) => ({ projectId: PROJECT, organization: null, actorId: null, ipAddress: null, dateFrom: null, dateTo: null, actions: null, exclude: [], targetType: type });
  /** Every event of the type in list order, page by page. */
  const walk = (type, size = 3) => pages(db, sel(type), size);
  const sparse = (type, limit) => db.prepare(`SELECT ${sparseTypeSql("?1", null, "?2", "?3")} AS s`).get(PROJECT, type, limit).s;
  const expected = (type) =>
    seqs(
      db
        .prepare("SELECT seq FROM events WHERE project_id = ? AND EXISTS (SELECT 1 FROM json_each(targets) t WHERE t.value ->> 'type' = ?) ORDER BY occurred_at DESC, seq DESC")
        .all(PROJECT, type),
    );
  const setsOf = (type) => db.prepare("SELECT count(*) AS n FROM target_type_sets WHERE project_id = ? AND type = ?").get(PROJECT, type).n;

  before(async () => {
    migrate(db, (f) => f < "0039");
    const tag = await idTag(PROJECT);
    // As the code before 0039 wrote them: an entry each in the type indexes, whatever their batch.
    for (let seq = 1; seq <= 4; seq++) insertAs(db, row(PROJECT, seq, mintEventId(at(seq), tag), at(seq), { targets: targets("doc", "user"), occurred_at: at(60 - seq * 7) }), 0);
    migrate(db, (f) => f >= "0039");
    const t = at(20);
    // A batch: docs first but at seq 7 (a user, then a doc second), users second at 5, 6 and 9; then a lone doc.
    const batch = [targets("doc", "user"), targets("doc", "user"), targets("user", "doc"), targets("doc"), targets("doc", "user")];
    commit(db, batch.map((ts, i) => row(PROJECT, 5 + i, mintEventId(t, tag), t, { targets: ts, occurred_at: at(57 - i * 9) })));
    commit(db, [row(PROJECT, 10, mintEventId(at(21), tag), at(21), { targets: targets("doc") })]);
  });

  it("keeps the old rows in the rebuilt indexes and writes a set for each place and type a batch names three times or more", () => {
    const entries = (place) =>
      seqs(db.prepare(`SELECT seq FROM events INDEXED BY events_${place === 0 ? "first" : "second"}_target_type_idx WHERE project_id = ? AND ${place === 0 ? "targets <> '[]'" : "json_array_length(targets) > 1"} AND (type_sets & ${1 << place}) = 0 AND (targets ->> '$[${place}].type') IS NOT NULL ORDER BY seq`).all(PROJECT));
    assert.deepEqual(entries(0), [1, 2, 3, 4, 7, 10]);
    assert.deepEqual(entries(1), [1, 2, 3, 4, 7]);
    const sets = db.prepare("SELECT at, type, first_seq, last_seq, members, seqs FROM target_type_sets ORDER BY at").all().map((r) => ({ ...r }));
    assert.deepEqual(sets, [
      { at: 0, type: "doc", first_seq: 5, last_seq: 9, members: 4, seqs: "[0,1,3,4]" },
      { at: 1, type: "user", first_seq: 5, last_seq: 9, members: 3, seqs: "[0,1,4]" },
    ]);
    assert.deepEqual(db.prepare("SELECT seq, type_sets FROM events WHERE seq BETWEEN 5 AND 10 ORDER BY seq").all().map((r) => [r.seq, r.type_sets]), [[5, 3], [6, 3], [7, 0], [8, 1], [9, 3], [10, 0]]);
  });

  it("finds every event of a type, old and new, in list order, whether its sets are few or many", () => {
    assert.equal(expected("doc").length, 10);
    // The doc set's 4 rows among 10: pages of 3 read them (9 x 4 x 4 <= 3 x 10 x 15), as a page of every row does.
    assert.deepEqual([sparse("doc", 3), sparse("doc", -1)], [1, 1]);
    assert.deepEqual(walk("doc"), expected("doc"));
    assert.deepEqual(walk("doc", 20), expected("doc"));
    assert.deepEqual(walk("user"), expected("user"));
    // Enough sets to count as common (covering seqs the project does not have): the walk of the time index finds the same.
    const fake = db.prepare("INSERT INTO target_type_sets (project_id, at, type, first_seq, last_seq, members, seqs) VALUES (?, ?, ?, ?, ?, 1, '[0]')");
    for (const [place, type] of [[0, "doc"], [1, "user"], [1, "doc"]]) for (let i = 0; i < 2_000; i++) fake.run(PROJECT, place, type, 1_000_000 + 2 * i, 1_000_000 + 2 * i);
    assert.deepEqual([sparse("doc", 3), sparse("user", 20)], [0, 0]);
    assert.deepEqual(walk("doc"), expected("doc"));
    assert.deepEqual(walk("doc", 20), expected("doc"));
    assert.deepEqual(walk("user"), expected("user"));
    const text = plan(db, selectEvents(sel("doc"), { rowKey: null, columns: "e.seq", cursor: null, limit: 3 }));
    assert.match(text, /SEARCH s USING PRIMARY KEY \(project_id=\? AND at=\? AND type=\?\)/);
    assert.match(text, /SEARCH e USING INDEX events_first_target_type_idx \(project_id=\? AND <expr>=\?\)/);
    assert.match(text, /SEARCH e USING INDEX events_project_time_idx \(project_id=\?\)/);
    assert.doesNotMatch(text, /SCAN e\b/);
    db.prepare("DELETE FROM target_type_sets WHERE first_seq >= 1000000").run();
  });

  it("drops a set with the last of its rows, deleted in any order, and not with a row of another type in its range", () => {
    const drop = db.prepare("DELETE FROM events WHERE project_id = ? AND seq = ?");
    // 7 is in both ranges but in neither set (a user first, a doc second).
    drop.run(PROJECT, 7);
    assert.deepEqual([setsOf("doc"), setsOf("user")], [1, 1]);
    for (const seq of [9, 5, 8]) drop.run(PROJECT, seq);
    assert.deepEqual([setsOf("doc"), setsOf("user")], [1, 1]);
    drop.run(PROJECT, 6);
    assert.deepEqual([setsOf("doc"), setsOf("user")], [0, 0]);
    // Two sets over the same rows (a shard copy that ran again over part of a batch): each goes with its last row.
    commit(db, Array.from({ length: 6 }, (_, i) => row(PROJECT, 20 + i, hex(16), at(30), { targets: targets("doc") })));
    db.prepare("INSERT INTO target_type_sets (project_id, at, type, first_seq, last_seq, members, seqs) VALUES (?, 0, 'doc', 20, 22, 3, '[0,1,2]')").run(PROJECT);
    for (const seq of [23, 24, 25, 21, 20]) drop.run(PROJECT, seq);
    assert.equal(setsOf("doc"), 2);
    drop.run(PROJECT, 22);
    assert.equal(setsOf("doc"), 0);
    assert.deepEqual(walk("doc"), expected("doc"));
    assert.deepEqual(expected("doc").sort((a, b) => a - b), [1, 2, 3, 4, 10]);
  });
});

describe("migration 0040: a commit's live rows are in time order through its span, with no time index entry each", () => {
  const db = new DatabaseSync(join(dir, "times.sqlite"));
  const at = (s) => `2026-11-29T14:00:${String(s).padStart(2, "0")}.000Z`;
  const seqs = (rows) => rows.map((r) => r.seq);
  const sel = (dateFrom = null, dateTo = null) => ({ projectId: PROJECT, organization: null, actorId: null, ipAddress: null, dateFrom, dateTo, actions: null, exclude: [] });
  const expected = (from = "", to = "9") =>
    seqs(db.prepare("SELECT seq FROM events WHERE project_id = ? AND occurred_at >= ? AND occurred_at <= ? ORDER BY occurred_at DESC, seq DESC").all(PROJECT, from, to));
  const entries = () => seqs(db.prepare("SELECT seq FROM events INDEXED BY events_project_time_idx WHERE project_id = ? AND time_in_span = 0 ORDER BY seq").all(PROJECT));

  before(async () => {
    migrate(db, (f) => f < "0040");
    const tag = await idTag(PROJECT);
    // As the code before 0040 wrote them: a live batch with its span, and a backfilled batch, each row in the time index.
    for (let seq = 1; seq <= 3; seq++) insertAs(db, row(PROJECT, seq, mintEventId(at(1), tag), at(1)), 0);
    for (let seq = 4; seq <= 5; seq++) insertAs(db, row(PROJECT, seq, mintEventId(at(2), tag), at(2), { occurred_at: at(20 + seq) }), 0);
    db.prepare("INSERT INTO commit_spans (received_at, project_id, first_seq, last_seq) VALUES (?, ?, 1, 3), (?, ?, 4, 5)").run(at(1), PROJECT, at(2), PROJECT);
    migrate(db, (f) => f >= "0040");
    // A live batch; a batch of two live rows around one at the first batch's instant; a lone live row; a live pair.
    commit(db, [6, 7, 8, 9].map((seq) => row(PROJECT, seq, mintEventId(at(20), tag), at(20))));
    commit(db, [10, 11, 12].map((seq) => row(PROJECT, seq, mintEventId(at(22), tag), at(22), seq === 11 ? { occurred_at: at(1) } : {})));
    commit(db, [row(PROJECT, 13, mintEventId(at(23), tag), at(23))]);
    commit(db, [14, 15].map((seq) => row(PROJECT, seq, mintEventId(at(24), tag), at(24))));
  });

  it("keeps the old rows in the rebuilt index, and gives a commit's live rows none and its span the mark", () => {
    assert.deepEqual(entries(), [1, 2, 3, 4, 5, 11, 13]);
    const spans = db.prepare("SELECT first_seq, last_seq, live FROM commit_spans WHERE project_id = ? ORDER BY first_seq").all(PROJECT).map((r) => ({ ...r }));
    assert.deepEqual(spans, [
      { first_seq: 1, last_seq: 3, live: 0 },
      { first_seq: 4, last_seq: 5, live: 0 },
      { first_seq: 6, last_seq: 9, live: 1 },
      { first_seq: 10, last_seq: 12, live: 1 },
      { first_seq: 14, last_seq: 15, live: 1 },
    ]);
  });

  it("lists every event once in list order, old and new, by page and between dates, walking the index and the live spans", () => {
    // 4 is backdated to the live pair's instant, 11 to the old live batch's.
    assert.deepEqual(expected(), [5, 15, 14, 4, 13, 12, 10, 9, 8, 7, 6, 11, 3, 2, 1]);
    for (const size of [1, 2, 3, 4, 50]) {
      assert.deepEqual(pages(db, sel(), size), expected(), `pages of ${size}`);
      assert.deepEqual(pages(db, sel(at(20), at(22)), size), expected(at(20), at(22)), `pages of ${size} between dates`);
      assert.deepEqual(pages(db, sel(null, at(1)), size), expected("", at(1)), `pages of ${size} to the first instant`);
    }
    const text = plan(db, selectEvents(sel(at(2)), { rowKey: null, columns: "e.seq", cursor: { occurredAt: at(22), seq: 12 }, limit: 3 }));
    assert.match(text, /SEARCH e USING COVERING INDEX events_project_time_idx \(project_id=\? AND occurred_at>\? AND \(occurred_at,seq\)<\(\?,\?\)\)/);
    assert.match(text, /SEARCH s USING INDEX commit_spans_live_time_idx \(project_id=\? AND received_at>\? AND received_at<\?\)/);
    assert.match(text, /SEARCH e USING INDEX events_project_seq_idx \(project_id=\? AND seq>\? AND seq<\?\)/);
    assert.doesNotMatch(text, /SCAN e\b|RIGHT PART/);
  });

  it("drops a live span, and its index entry, with the last of its rows", () => {
    const drop = db.prepare("DELETE FROM events WHERE project_id = ? AND seq = ?");
    for (const seq of [9, 6, 8]) drop.run(PROJECT, seq);
    const live = () => db.prepare("SELECT first_seq FROM commit_spans INDEXED BY commit_spans_live_time_idx WHERE project_id = ? AND live = 1 ORDER BY first_seq").all(PROJECT).map((r) => r.first_seq);
    assert.deepEqual(live(), [6, 10, 14]);
    drop.run(PROJECT, 7);
    assert.deepEqual(live(), [10, 14]);
    assert.deepEqual(pages(db, sel(), 2), expected());
  });
});

describe("migration 0041: a commit's live rows of a repeated action are one set, with no action index entry each", () => {
  const db = new DatabaseSync(join(dir, "actions.sqlite"));
  const at = (s) => `2026-11-29T15:00:${String(s).padStart(2, "0")}.000Z`;
  const seqs = (rows) => rows.map((r) => r.seq);
  const sel = (actions, more = {}) => ({ projectId: PROJECT, organization: null, actorId: null, ipAddress: null, dateFrom: null, dateTo: null, actions, exclude: [], ...more });
  const expected = (actions, where = "1") =>
    seqs(db.prepare(`SELECT seq FROM events WHERE project_id = ? AND action IN (SELECT value FROM json_each(?)) AND ${where} ORDER BY occurred_at DESC, seq DESC`).all(PROJECT, JSON.stringify(actions)));
  const entries = () => seqs(db.prepare("SELECT seq FROM events INDEXED BY events_action_time_idx WHERE project_id = ? AND action_in_set = 0 AND action > '' ORDER BY seq").all(PROJECT));
  const setsOf = () => db.prepare("SELECT action, first_seq, last_seq, seqs FROM action_sets WHERE project_id = ? ORDER BY first_seq, action").all(PROJECT).map((r) => ({ ...r }));

  before(async () => {
    migrate(db, (f) => f < "0041");
    const tag = await idTag(PROJECT);
    // As the code of 0040 wrote them: a live batch (time_in_span, its span live), each row in the action index.
    for (let seq = 1; seq <= 4; seq++) insertAs(db, { ...row(PROJECT, seq, mintEventId(at(1), tag), at(1), { action: "doc.read" }), time_in_span: 1 }, 0);
    db.prepare("INSERT INTO commit_spans (received_at, project_id, first_seq, last_seq, live) VALUES (?, ?, 1, 4, 1)").run(at(1), PROJECT);
    migrate(db, (f) => f >= "0041");
    // A live batch repeating two actions around a backdated row of one and a lone action; a live batch of one action; a
    // lone live row; a backdated batch at the first batch's instant.
    const actions = ["doc.read", "doc.write", "doc.read", "doc.write", "doc.read", "user.login", "doc.write", "doc.read"];
    commit(db, actions.map((action, i) => row(PROJECT, 5 + i, mintEventId(at(20), tag), at(20), { action, ...(i === 2 ? { occurred_at: at(1) } : {}) })));
    commit(db, [13, 14, 15].map((seq) => row(PROJECT, seq, mintEventId(at(22), tag), at(22), { action: "user.login" })));
    commit(db, [row(PROJECT, 16, mintEventId(at(23), tag), at(23), { action: "doc.read" })]);
    commit(db, [17, 18, 19].map((seq) => row(PROJECT, seq, mintEventId(at(24), tag), at(24), { action: "doc.read", occurred_at: at(1) })));
  });

  it("keeps the old rows in the rebuilt index and writes a set for each action a commit's live rows repeat three times or more", () => {
    assert.deepEqual(entries(), [1, 2, 3, 4, 7, 10, 16, 17, 18, 19]);
    assert.deepEqual(setsOf(), [
      { action: "doc.read", first_seq: 5, last_seq: 12, seqs: "[0,4,7]" },
      { action: "doc.write", first_seq: 6, last_seq: 11, seqs: "[0,2,5]" },
      { action: "user.login", first_seq: 13, last_seq: 15, seqs: "[0,1,2]" },
    ]);
  });

  it("lists every event of an action once in list order, old and new, by page, between dates, and with several actions", () => {
    for (const actions of [["doc.read"], ["doc.write"], ["user.login"], ["doc.read", "user.login"], ["doc.read", "doc.write", "user.login", "none"]]) {
      for (const size of [1, 2, 3, 50]) {
        assert.deepEqual(pages(db, sel(actions), size), expected(actions), `${actions} by ${size}`);
        assert.deepEqual(pages(db, sel(actions, { dateFrom: at(20), dateTo: at(22) }), size), expected(actions, `occurred_at BETWEEN '${at(20)}' AND '${at(22)}'`));
      }
    }
    const text = plan(db, selectEvents(sel(["doc.read"], { dateFrom: at(2) }), { rowKey: null, columns: "e.seq", cursor: { occurredAt: at(22), seq: 12 }, limit: 3 }));
    assert.match(text, /SEARCH e USING COVERING INDEX events_action_time_idx \(project_id=\? AND action=\? AND occurred_at>\? AND \(occurred_at,seq\)<\(\?,\?\)\)/);
    assert.match(text, /SEARCH s USING PRIMARY KEY \(project_id=\? AND action=\? AND received_at>\? AND received_at<\?\)/);
    // (rowid<?: the older path's rows only, row-keys.ts; the index holds the row id after the seq.)
    assert.match(text, /SEARCH e USING INDEX events_project_seq_idx \(project_id=\? AND seq=\? AND rowid<\?\)/);
    assert.doesNotMatch(text, /SCAN e\b|SCAN s\b/);
  });

  it("answers a statement too long for D1 by checking each row's action along the list walk, with the same events", () => {
    const fifty = ["doc.read", "user.login", ...Array.from({ length: 48 }, (_, i) => `other.${i}`)];
    const metadata = [1, 2, 3, 4].map((i) => ({ key: `k${i}`, value: i }));
    const wide = sel(fifty, { ipAddress: "127.0.0.1", targetType: "doc", targetId: "doc_0", dateFrom: at(0), metadata });
    const long = selectEvents(wide, { rowKey: null, columns: "e.seq", cursor: null, limit: 3 });
    assert.ok(long.sql.length < MAX_STATEMENT_BYTES, `${long.sql.length} bytes`);
    assert.doesNotMatch(long.sql, /action_sets/);
    // Every row matches these filters but the actions: the same address, target and metadata.
    db.prepare("UPDATE events SET ip_address = '127.0.0.1', targets = '[{\"id\":\"doc_0\",\"name\":null,\"type\":\"doc\"}]', metadata = '{\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4}' WHERE project_id = ?").run(PROJECT);
    for (const size of [1, 2, 3, 50]) assert.deepEqual(pages(db, wide, size), expected(["doc.read", "user.login"]), `by ${size}`);
  });

  it("drops a set with the last of its rows, deleted in any order, and not with a row of another action in its range", () => {
    const drop = db.prepare("DELETE FROM events WHERE project_id = ? AND seq = ?");
    for (const seq of [12, 6, 7, 9, 10]) drop.run(PROJECT, seq);
    assert.deepEqual(setsOf().map((s) => s.action), ["doc.read", "doc.write", "user.login"]);
    drop.run(PROJECT, 5);
    assert.deepEqual(setsOf().map((s) => s.action), ["doc.write", "user.login"]);
    drop.run(PROJECT, 11);
    assert.deepEqual(setsOf().map((s) => s.action), ["doc.write", "user.login"]);
    drop.run(PROJECT, 8);
    assert.deepEqual(setsOf().map((s) => s.action), ["user.login"]);
    for (const seq of [15, 13, 14]) drop.run(PROJECT, seq);
    assert.deepEqual(setsOf(), []);
    assert.deepEqual(pages(db, sel(["doc.read", "doc.write", "user.login"]), 2), expected(["doc.read", "doc.write", "user.login"]));
  });
});

describe("migration 0042: a commit's live rows of a repeated organization are one set, with no organization index entry each", () => {
  const db = new DatabaseSync(join(dir, "organizations.sqlite"));
  const at = (s) => `2026-11-29T21:00:${String(s).padStart(2, "0")}.000Z`;
  const seqs = (rows) => rows.map((r) => r.seq);
  const sel = (organization, more = {}) => ({ projectId: PROJECT, organization, actorId: null, ipAddress: null, dateFrom: null, dateTo: null, actions: null, exclude: [], ...more });
  const expected = (organization, where = "1") =>
    seqs(db.prepare(`SELECT seq FROM events WHERE project_id = ? AND organization = ? AND ${where} ORDER BY occurred_at DESC, seq DESC`).all(PROJECT, organization));
  const entries = () =>
    seqs(db.prepare("SELECT seq FROM events INDEXED BY events_org_time_idx WHERE project_id = ? AND organization IS NOT NULL AND org_in_set = 0 ORDER BY seq").all(PROJECT));
  const setsOf = () => db.prepare("SELECT organization, first_seq, last_seq, seqs FROM organization_sets WHERE project_id = ? ORDER BY first_seq, organization").all(PROJECT).map((r) => ({ ...r }));

  before(async () => {
    migrate(db, (f) => f < "0042");
    const tag = await idTag(PROJECT);
    // As the code of 0041 wrote them: a live batch of one tenant (time_in_span, its span live), each row in the organization index.
    for (let seq = 1; seq <= 4; seq++) insertAs(db, { ...row(PROJECT, seq, mintEventId(at(1), tag), at(1), { organization: "acme" }), time_in_span: 1 }, 0);
    db.prepare("INSERT INTO commit_spans (received_at, project_id, first_seq, last_seq, live) VALUES (?, ?, 1, 4, 1)").run(at(1), PROJECT);
    migrate(db, (f) => f >= "0042");
    // A live batch repeating two organizations around a backdated row of one, a lone one and an event with none; a live
    // tenant batch; a lone live row; a backdated batch at the first batch's instant.
    const orgs = ["acme", "globex", "acme", "globex", "acme", null, "globex", "acme", "umbrella"];
    commit(db, orgs.map((organization, i) => row(PROJECT, 5 + i, mintEventId(at(20), tag), at(20), { organization, ...(i === 2 ? { occurred_at: at(1) } : {}) })));
    commit(db, [14, 15, 16].map((seq) => row(PROJECT, seq, mintEventId(at(22), tag), at(22), { organization: "initech" })));
    commit(db, [row(PROJECT, 17, mintEventId(at(23), tag), at(23), { organization: "acme" })]);
    commit(db, [18, 19, 20].map((seq) => row(PROJECT, seq, mintEventId(at(24), tag), at(24), { organization: "acme", occurred_at: at(1) })));
  });

  it("keeps the old rows in the rebuilt index and writes a set for each organization a commit's live rows repeat three times or more", () => {
    assert.deepEqual(entries(), [1, 2, 3, 4, 7, 13, 17, 18, 19, 20]);
    assert.deepEqual(setsOf(), [
      { organization: "acme", first_seq: 5, last_seq: 12, seqs: "[0,4,7]" },
      { organization: "globex", first_seq: 6, last_seq: 11, seqs: "[0,2,5]" },
      { organization: "initech", first_seq: 14, last_seq: 16, seqs: "[0,1,2]" },
    ]);
  });

  it("lists every event of an organization once in list order, old and new, by page, between dates and with an action", () => {
    for (const organization of ["acme", "globex", "initech", "umbrella", "none"]) {
      for (const size of [1, 2, 3, 50]) {
        assert.deepEqual(pages(db, sel(organization), size), expected(organization), `${organization} by ${size}`);
        assert.deepEqual(pages(db, sel(organization, { dateFrom: at(20), dateTo: at(22) }), size), expected(organization, `occurred_at BETWEEN '${at(20)}' AND '${at(22)}'`));
        assert.deepEqual(pages(db, sel(organization, { actions: ["doc.viewed"] }), size), expected(organization));
      }
    }
    const text = plan(db, selectEvents(sel("acme", { dateFrom: at(2) }), { rowKey: null, columns: "e.seq", cursor: { occurredAt: at(22), seq: 12 }, limit: 3 }));
    assert.match(text, /SEARCH e USING COVERING INDEX events_org_time_idx \(project_id=\? AND organization=\? AND occurred_at>\? AND \(occurred_at,seq\)<\(\?,\?\)\)/);
    assert.match(text, /SEARCH s USING PRIMARY KEY \(project_id=\? AND organization=\? AND received_at>\? AND received_at<\?\)/);
    // (rowid<?: the older path's rows only, row-keys.ts; the index holds the row id after the seq.)
    assert.match(text, /SEARCH e USING INDEX events_project_seq_idx \(project_id=\? AND seq=\? AND rowid<\?\)/);
    assert.doesNotMatch(text, /SCAN e\b|SCAN s\b/);
  });

  it("drops a set with the last of its rows, deleted in any order, and not with a row of another organization in its range", () => {
    const drop = db.prepare("DELETE FROM events WHERE project_id = ? AND seq = ?");
    for (const seq of [12, 6, 7, 9, 10]) drop.run(PROJECT, seq);
    assert.deepEqual(setsOf().map((s) => s.organization), ["acme", "globex", "initech"]);
    drop.run(PROJECT, 5);
    assert.deepEqual(setsOf().map((s) => s.organization), ["globex", "initech"]);
    drop.run(PROJECT, 11);
    assert.deepEqual(setsOf().map((s) => s.organization), ["globex", "initech"]);
    drop.run(PROJECT, 8);
    assert.deepEqual(setsOf().map((s) => s.organization), ["initech"]);
    for (const seq of [16, 14, 15]) drop.run(PROJECT, seq);
    assert.deepEqual(setsOf(), []);
    for (const organization of ["acme", "globex", "initech"]) assert.deepEqual(pages(db, sel(organization), 2), expected(organization));
  });
});

describe("migration 0043: a commit's live rows of one address are one set in list order, in place of a run", () => {
  const db = new DatabaseSync(join(dir, "addresses.sqlite"));
  const at = (s) => `2026-11-29T23:00:${String(s).padStart(2, "0")}.000Z`;
  const A = "10.43.0.1";
  const B = "10.43.0.2";
  const seqs = (rows) => rows.map((r) => r.seq);
  const sel = (ip, more = {}) => ({ projectId: PROJECT, organization: null, actorId: null, ipAddress: ip, dateFrom: null, dateTo: null, actions: null, exclude: [], ...more });
  const expected = (ip, where = "1") =>
    seqs(db.prepare(`SELECT seq FROM events WHERE project_id = ? AND ip_address = ? AND ${where} ORDER BY occurred_at DESC, seq DESC`).all(PROJECT, ip));
  const setsOf = () => db.prepare("SELECT ip_address, first_seq, last_seq, seqs FROM address_sets WHERE project_id = ? ORDER BY first_seq").all(PROJECT).map((r) => ({ ...r }));
  const runsOf = () => db.prepare("SELECT ip, first_seq, last_seq FROM ip_runs WHERE project_id = ? ORDER BY first_seq").all(PROJECT).map((r) => ({ ...r }));

  before(async () => {
    migrate(db, (f) => f < "0043");
    const tag = await idTag(PROJECT);
    // As the code of 0042 wrote it: a live batch from A is a run (ip_run = 1) in its live span.
    for (let seq = 1; seq <= 4; seq++) insertAs(db, { ...row(PROJECT, seq, mintEventId(at(1), tag), at(1), { ip_address: A }), time_in_span: 1, ip_run: 1 }, 0);
    db.prepare("INSERT INTO commit_spans (received_at, project_id, first_seq, last_seq, live) VALUES (?, ?, 1, 4, 1)").run(at(1), PROJECT);
    db.prepare("INSERT INTO ip_runs (project_id, ip, first_seq, last_seq) VALUES (?, ?, 1, 4)").run(PROJECT, A);
    migrate(db, (f) => f >= "0043");
    // A live batch of two addresses taking turns, around a backdated row and a row with none; a backdated batch from B
    // (a run); a lone live row from A (an index entry).
    const ips = [A, B, A, B, A, null, B, A, A];
    commit(db, ips.map((ip_address, i) => row(PROJECT, 5 + i, mintEventId(at(20), tag), at(20), { ip_address, ...(i === 7 ? { occurred_at: at(1) } : {}) })));
    commit(db, [14, 15, 16].map((seq) => row(PROJECT, seq, mintEventId(at(22), tag), at(22), { ip_address: B, occurred_at: at(2) })));
    commit(db, [row(PROJECT, 17, mintEventId(at(23), tag), at(23), { ip_address: A })]);
  });

  it("leaves the old run as it is, and writes a set for each address a commit's live rows share three times or more", () => {
    assert.deepEqual(setsOf(), [
      { ip_address: A, first_seq: 5, last_seq: 13, seqs: "[0,2,4,8]" },
      { ip_address: B, first_seq: 6, last_seq: 11, seqs: "[0,2,5]" },
    ]);
    assert.deepEqual(runsOf(), [{ ip: A, first_seq: 1, last_seq: 4 }, { ip: B, first_seq: 14, last_seq: 16 }]);
    const entries = db.prepare("SELECT seq FROM events INDEXED BY events_ip_time_idx WHERE project_id = ? AND ip_address IS NOT NULL AND ip_run = 0 ORDER BY seq").all(PROJECT);
    assert.deepEqual(seqs(entries), [12, 17]);
  });

  it("lists every event of an address once in list order, old and new, by page, between dates, with an action, and when common", () => {
    const check = () => {
      for (const ip of [A, B, "10.43.0.9"]) {
        for (const size of [1, 2, 3, 50]) {
          assert.deepEqual(pages(db, sel(ip), size), expected(ip), `${ip} by ${size}`);
          assert.deepEqual(pages(db, sel(ip, { dateFrom: at(2), dateTo: at(22) }), size), expected(ip, `occurred_at BETWEEN '${at(2)}' AND '${at(22)}'`));
          assert.deepEqual(pages(db, sel(ip, { actions: ["doc.viewed"] }), size), expected(ip));
        }
      }
    };
    check();
    const text = plan(db, selectEvents(sel(A, { dateFrom: at(2) }), { rowKey: null, columns: "e.seq", cursor: { occurredAt: at(22), seq: 12 }, limit: 3 }));
    assert.match(text, /SEARCH s USING PRIMARY KEY \(project_id=\? AND ip_address=\? AND received_at>\? AND received_at<\?\)/);
    // (rowid<?: the older path's rows only, row-keys.ts; the index holds the row id after the seq.)
    assert.match(text, /SEARCH e USING INDEX events_project_seq_idx \(project_id=\? AND seq=\? AND rowid<\?\)/);
    assert.doesNotMatch(text, /SCAN e\b|SCAN s\b/);
    // Runs enough to count as common (over seqs the project does not have): the list walk that checks each row finds the same.
    const fake = db.prepare("INSERT INTO ip_runs (project_id, ip, first_seq, last_seq) VALUES (?, ?, ?, ?)");
    for (let i = 0; i < 2_000; i++) for (const ip of [A, B]) fake.run(PROJECT, ip, 1_000_000 + 2 * i, 1_000_000 + 2 * i);
    check();
    db.prepare("DELETE FROM ip_runs WHERE first_seq >= 1000000").run();
  });

  it("drops a set with the last of its rows that holds the address, deleted in any order or scrubbed, and not with another address's row", () => {
    const drop = db.prepare("DELETE FROM events WHERE project_id = ? AND seq = ?");
    const erase = db.prepare("UPDATE events SET ip_address = NULL WHERE project_id = ? AND seq = ?");
    for (const seq of [7, 5]) drop.run(PROJECT, seq);
    erase.run(PROJECT, 9);
    assert.deepEqual(setsOf().map((s) => s.ip_address), [A, B]);
    drop.run(PROJECT, 13);
    assert.deepEqual(setsOf().map((s) => s.ip_address), [B]);
    erase.run(PROJECT, 6);
    drop.run(PROJECT, 11);
    assert.deepEqual(setsOf().map((s) => s.ip_address), [B]);
    erase.run(PROJECT, 8);
    assert.deepEqual(setsOf(), []);
    // The runs are 0038's, as before.
    assert.deepEqual(runsOf(), [{ ip: A, first_seq: 1, last_seq: 4 }, { ip: B, first_seq: 14, last_seq: 16 }]);
    for (const ip of [A, B]) assert.deepEqual(pages(db, sel(ip), 2), expected(ip));
  });
});

describe("migration 0045: a keyed project's rows by keyed row ids, beside a project on the seq index", () => {
  const db = new DatabaseSync(join(dir, "keyed.sqlite"));
  const at = (s) => `2026-11-30T09:00:${String(s).padStart(2, "0")}.000Z`;
  const sel = (projectId, fields = {}) => ({ projectId, organization: null, actorId: null, ipAddress: null, dateFrom: null, dateTo: null, actions: null, exclude: [], ...fields });
  const expected = (projectId, where = "1") => db.prepare(`SELECT seq FROM events WHERE project_id = ? AND ${where} ORDER BY occurred_at DESC, seq DESC`).all(projectId).map((r) => r.seq);

  before(async () => {
    migrate(db);
    // The same commits for both projects, interleaved: three live commits of three (each an action set and a live
    // span), a lone live row, a backfilled pair.
    for (const project of [PROJECT, OTHER]) {
      const tag = await idTag(project);
      const live = (first, s, fields = {}) => [0, 1, 2].map((i) => row(project, first + i, mintEventId(at(s), tag), at(s), { action: "doc.read", ...fields }));
      commit(db, live(1, 1));
      commit(db, live(4, 3, { organization: "org_k" }));
      commit(db, live(7, 5, { organization: "org_k" }));
      commit(db, [row(project, 10, mintEventId(at(6), tag), at(6))]);
      commit(db, [11, 12].map((seq) => row(project, seq, mintEventId(at(7), tag), at(7), { occurred_at: at(seq - 10) })));
    }
    // PROJECT's rows move to their keys, as a writer of keyed rows will write them (row-keys.ts); OTHER keeps the seq index.
    db.prepare("INSERT INTO project_keys (project_id, n) VALUES (?, 1)").run(PROJECT);
    db.prepare(`UPDATE events SET row_id = ${KEY_SPAN} + seq WHERE project_id = ?`).run(PROJECT);
  });

  it("reads each project's rows by seq range in order on its own path, through row ids or the seq index, never a scan", () => {
    const read = (project, r) => db.prepare(`SELECT e.seq FROM ${rowsBySeq({ project: "?1", ...r })} e`).all(project).map((x) => x.seq);
    for (const project of [PROJECT, OTHER]) {
      assert.deepEqual(read(project, { lo: "0", hi: null }), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
      assert.deepEqual(read(project, { lo: "5", hi: "8", desc: true }), [8, 7, 6, 5]);
      assert.deepEqual(read(project, { lo: "4", hi: null, limit: "4" }), [4, 5, 6, 7]);
    }
    const text = plan(db, { sql: `SELECT e.seq FROM ${rowsBySeq({ project: "?1", lo: "?2", hi: "?3" })} e`, params: [PROJECT, 3, 9] });
    assert.match(text, /SEARCH e USING (COVERING )?INDEX events_project_seq_idx \(project_id=\? AND seq>\? AND seq<\?\)/);
    assert.match(text, /SEARCH e USING INTEGER PRIMARY KEY \(rowid>\? AND rowid<\?\)/);
    assert.doesNotMatch(text, /SCAN e\b/);
  });

  it("reads nothing a database writer plants on the path a project is not on", () => {
    const tag = "planted";
    db.prepare(`INSERT INTO events (row_id, id, project_id, seq, action, targets, metadata, occurred_at, received_at, pii_commitment, hash) VALUES (?, ?, ?, 13, 'x', '[]', '{}', ?, ?, '', '')`).run(900, tag, PROJECT, at(8), at(8));
    db.prepare(`INSERT INTO events (row_id, id, project_id, seq, action, targets, metadata, occurred_at, received_at, pii_commitment, hash) VALUES (?, ?, ?, 13, 'x', '[]', '{}', ?, ?, '', '')`).run(2 * KEY_SPAN + 13, `${tag}-2`, OTHER, at(8), at(8));
    try {
      for (const project of [PROJECT, OTHER]) {
        assert.deepEqual(db.prepare(`SELECT e.seq FROM ${rowsBySeq({ project: "?1", lo: "10", hi: null })} e`).all(project).map((x) => x.seq), [10, 11, 12], project);
      }
    } finally {
      db.prepare("DELETE FROM events WHERE id IN (?, ?)").run(tag, `${tag}-2`);
    }
  });

  it("lists every event once in list order, by page, with and without filters, the spans and sets of both layouts included", () => {
    // Each as its readers know it from its place (storage/shards.ts): PROJECT numbered 1, OTHER with no key.
    for (const [project, rowKey] of [[PROJECT, 1], [OTHER, null]]) {
      for (const size of [1, 2, 3, 5, 50]) {
        assert.deepEqual(pages(db, sel(project), size, rowKey), expected(project), `pages of ${size}`);
        assert.deepEqual(pages(db, sel(project, { actions: ["doc.read"] }), size, rowKey), expected(project, "action = 'doc.read'"), `an action by pages of ${size}`);
        assert.deepEqual(pages(db, sel(project, { organization: "org_k" }), size, rowKey), expected(project, "organization = 'org_k'"), `an organization by pages of ${size}`);
      }
    }
    const keyed = plan(db, selectEvents(sel(PROJECT), { rowKey: 1, columns: "e.seq", cursor: null, limit: 3 }));
    assert.match(keyed, /SEARCH e USING INTEGER PRIMARY KEY \(rowid>\? AND rowid<\?\)/);
    assert.doesNotMatch(keyed, /events_project_seq_idx/);
    assert.doesNotMatch(keyed, /SCAN e\b/);
    const older = plan(db, selectEvents(sel(OTHER), { rowKey: null, columns: "e.seq", cursor: null, limit: 3 }));
    assert.match(older, /SEARCH e USING INDEX events_project_seq_idx/);
    assert.doesNotMatch(older, /SCAN e\b/);
  });

  it("finds every event by id, keyed or not", () => {
    for (const project of [PROJECT, OTHER]) {
      const rows = db.prepare("SELECT id, seq FROM events WHERE project_id = ?").all(project);
      for (const r of rows) assert.deepEqual(all(db, eventsByIdStatement("e.seq", [r.id], project)).map((x) => x.seq), [r.seq], `seq ${r.seq}`);
    }
  });
});

describe("migration 0046: a keyed row takes no seq index entry, and the spans, runs and sets of either layout go with their last row", () => {
  const db = new DatabaseSync(join(dir, "partial-seq.sqlite"));
  const at = (s) => `2026-11-30T17:00:${String(s).padStart(2, "0")}.000Z`;
  /** Each kind, and what makes a row of the range one it holds (every row here has the same action, organization and type). */
  const HOLDS = { commit_spans: "1", ip_runs: "e.ip_address = s.ip", action_sets: "1", organization_sets: "1", address_sets: "e.ip_address = s.ip_address", target_type_sets: "1" };
  const SETS = Object.keys(HOLDS);
  const holder = (t) => `EXISTS (SELECT 1 FROM events e WHERE e.project_id = s.project_id AND e.seq BETWEEN s.first_seq AND s.last_seq AND ${HOLDS[t]})`;
  /** The seq index's entries, as ANALYZE counts them. */
  const entries = () => {
    db.exec("ANALYZE events_project_seq_idx");
    return Number(db.prepare("SELECT stat FROM sqlite_stat1 WHERE idx = 'events_project_seq_idx'").get().stat.split(" ")[0]);
  };
  const rowsOf = (project) => db.prepare("SELECT count(*) AS n FROM events WHERE project_id = ?").get(project).n;
  /** Every span, run and set of the project whose seq range holds no row of it: none may be left. */
  const orphans = (project) =>
    SETS.flatMap((t) =>
      db
        .prepare(`SELECT '${t}' AS t, first_seq, last_seq FROM ${t} s WHERE project_id = ? AND NOT ${holder(t)}`)
        .all(project),
    );
  const held = (project) => SETS.map((t) => db.prepare(`SELECT count(*) AS n FROM ${t} WHERE project_id = ?`).get(project).n);
  const snapshot = (project) => SETS.flatMap((t) => db.prepare(`SELECT '${t}' AS t, * FROM ${t} WHERE project_id = ?`).all(project).map((r) => JSON.stringify(r)));
  /** Commits as the ledger makes them: live ones of four sharing an action, organization, address and target type (a span and a set of each), and a backfilled one (an address run). */
  async function commits(project, first) {
    const tag = await idTag(project);
    const same = { action: "doc.read", organization: "org_p", ip_address: "10.1.1.1", targets: JSON.stringify([{ id: "d", name: null, type: "doc" }]) };
    for (let c = 0; c < 2; c++) {
      const s = first + 4 * c;
      commit(db, [0, 1, 2, 3].map((i) => row(project, s + i, mintEventId(at(s), tag), at(s), same)));
    }
    commit(db, [0, 1, 2].map((i) => row(project, first + 8 + i, mintEventId(at(first + 8), tag), at(first + 8), { ...same, occurred_at: at(i + 1) })));
  }

  before(async () => {
    migrate(db, (f) => f < "0046");
    db.prepare("INSERT INTO project_keys (project_id, n) VALUES (?, 3)").run(PROJECT);
    await commits(PROJECT, 1);
    await commits(OTHER, 1);
    assert.equal(entries(), 22, "before 0046 the index holds every row");
    migrate(db, (f) => f >= "0046");
  });

  it("holds only the rows with no key, before and after new commits of both layouts", async () => {
    assert.equal(entries(), rowsOf(OTHER));
    await commits(PROJECT, 12);
    await commits(OTHER, 12);
    assert.equal(rowsOf(PROJECT), 22);
    assert.equal(entries(), rowsOf(OTHER));
    assert.ok(db.prepare("SELECT min(row_id) AS m FROM events WHERE project_id = ?").get(PROJECT).m > 3 * KEY_SPAN);
  });

  it("still refuses a second row of one seq, keyed or not", async () => {
    for (const project of [PROJECT, OTHER]) {
      const tag = await idTag(project);
      assert.throws(() => commit(db, [row(project, 5, mintEventId(at(40), tag), at(40))]), /UNIQUE constraint failed/, project);
    }
  });

  it("drops each span, run and set with the last row of its range that it holds, deleted in any order or scrubbed, on either path", async () => {
    for (const project of [PROJECT, OTHER]) {
      await commits(project, 23);
      assert.ok(held(project).every((n) => n > 0), `${project} has a span, run and set of each kind: ${held(project)}`);
      // A scrub of the address takes the rows out of their address runs and sets.
      db.prepare("UPDATE events SET ip_address = NULL WHERE project_id = ? AND seq BETWEEN 12 AND 22").run(project);
      assert.deepEqual(orphans(project), []);
      // Ranges ending at their last seq, at their first, and in no order.
      const range = (lo, hi) => Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
      const seqs = [...range(1, 11), ...range(23, 33).reverse(), ...range(12, 22).sort((a, b) => ((a * 7919) % 23) - ((b * 7919) % 23))];
      assert.equal(seqs.length, rowsOf(project));
      const drop = db.prepare("DELETE FROM events WHERE project_id = ? AND seq = ?");
      for (const seq of seqs) {
        const before = snapshot(project);
        drop.run(project, seq);
        assert.deepEqual(orphans(project), [], `${project} after seq ${seq}`);
        // And none went while a row it holds is left.
        const after = new Set(snapshot(project));
        for (const gone of before.filter((r) => !after.has(r)).map((r) => JSON.parse(r))) {
          const { t, first_seq, last_seq } = gone;
          const left = db.prepare(`SELECT count(*) AS n FROM (SELECT ?1 AS project_id, ?2 AS first_seq, ?3 AS last_seq, ?4 AS ip, ?4 AS ip_address) s WHERE ${holder(t)}`).get(project, first_seq, last_seq, gone.ip ?? gone.ip_address ?? null).n;
          assert.equal(left, 0, `${t} [${first_seq}, ${last_seq}] of ${project} went with seq ${seq}, its rows still there`);
        }
      }
      assert.deepEqual(held(project), [0, 0, 0, 0, 0, 0], project);
    }
  });
});
