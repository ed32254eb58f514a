import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { asInvocation, meterReport, meterTotals, resetMeterReport } from "../../src/lib/meter";
import { meterEnv } from "../../src/lib/metered-bindings";
import { call, createProject, handRowId } from "../helpers";
import { archiveAll, segmentsOf } from "../storage/archive-helpers";
import { SEARCH_GROUP } from "../../src/model/search-index";

describe("the meter counts billed rows", () => {
  it("takes D1's own rows_read and rows_written, indexes included, per invocation and in total", async () => {
    const metered = meterEnv({ DB: env.DB });
    await env.DB.exec("CREATE TABLE IF NOT EXISTS meter_probe (a INTEGER PRIMARY KEY, b TEXT); CREATE INDEX IF NOT EXISTS meter_probe_b ON meter_probe (b)");
    resetMeterReport();
    await asInvocation("test rows", async () => {
      await metered.DB.prepare("INSERT INTO meter_probe (b) VALUES (?)").bind("x").run();
      await metered.DB.batch([metered.DB.prepare("INSERT INTO meter_probe (b) VALUES ('y')"), metered.DB.prepare("SELECT * FROM meter_probe")]);
    });
    const row = meterReport().find((r) => r.invocation === "test rows")!;
    // Each insert writes the row and its index entry; D1 bills both.
    expect(row.rowsWritten).toBe(4);
    expect(row.rowsRead).toBeGreaterThanOrEqual(2);
    expect(meterTotals().d1Written).toBe(4);
  });

  it("reports what one ingest writes to D1 and to the ledger's own SQLite", async () => {
    const project = await createProject();
    const event = { action: "probe.one", organization: "org_1", actor: { id: "u_1" }, targets: [{ type: "doc", id: "d_1" }] };
    // The ledger's first wake sets itself up; what follows is what every later event costs.
    expect((await call("POST", "/v1/events", { key: project.key, body: event })).status).toBe(201);
    resetMeterReport();
    expect((await call("POST", "/v1/events", { key: project.key, body: event })).status).toBe(201);
    const report = await call("GET", "/__meter");
    const { rows, invocations } = report.json.data;
    // D1: the event row and its 5 indexes and its target's 2 index entries (issue 38 counted 11 with an id index entry,
    // a search entry and a seq index entry an event: a keyed project's row is found by its row id, migration 0046). Alone in its commit and live, it takes neither an id index entry (0036) nor a span
    // (0029): its id names its instant, where the time index holds it (migration 0037). Its project's tag row, which
    // a public receipt reads, was written by the first event; writing it again is an ignored conflict, not a row.
    // It goes on in the first event's search group, which has no entry until 16 events fill it (search-index.ts).
    expect(rows.d1Written).toBe(8);
    const spans = await project.db.prepare("SELECT count(*) AS n FROM commit_spans WHERE project_id = ?").bind(project.id).first<{ n: number }>();
    expect(spans!.n).toBe(0);
    const found = await project.db.prepare("SELECT count(*) AS n FROM events WHERE project_id = ? AND id_indexed = 2").bind(project.id).first<{ n: number }>();
    expect(found!.n).toBe(2);
    const tags = await project.db.prepare("SELECT count(*) AS n FROM project_tags WHERE project_id = ?").bind(project.id).first<{ n: number }>();
    expect(tags!.n).toBe(1);
    // The ledger's own storage, billed as rows too: the log's partial leaf tile, whose row also keeps the chain's
    // head (its last leaf's data: src/log/log-store.ts; a head row of its own per commit was 1 more). The activity
    // counts wait in memory for the next read or alarm (src/reads/rollups.ts; written per commit, they were 3 more
    // rows), and the log's frontier is saved once a leaf tile (src/log/log-store.ts; written per commit, 1 more).
    // And the commit's journal, stored before its D1 batch is sent (src/chain/commit-journal.ts): one row a commit,
    // written over by the next, never deleted.
    expect(rows.doWritten).toBe(2);
    const append = invocations.find((i: { invocation: string }) => i.invocation === "ProjectLedger.append");
    expect(append.rowsWritten).toBe(rows.d1Written + rows.doWritten);
    console.log(`one event at ingest: ${rows.d1Written} D1 rows written, ${rows.doWritten} Durable Object rows written, ${rows.d1Read + rows.doRead} rows read`);
  });

  it("writes no filter index entry for a field the event leaves out (a system event: no actor, no organization)", async () => {
    const project = await createProject();
    expect((await call("POST", "/v1/events", { key: project.key, body: { action: "probe.first" } })).status).toBe(201);
    resetMeterReport();
    expect((await call("POST", "/v1/events", { key: project.key, body: { action: "system.cron.ran" } })).status).toBe(201);
    const { rows } = (await call("GET", "/__meter")).json.data;
    // The row, its time, action and address index entries (migration 0030: the actor and organization indexes
    // hold only events that have one; live and alone in its commit, it needs no id entry: 0037; its search group stays open).
    expect(rows.d1Written).toBe(4);
    const listed = await call("GET", "/v1/events?organization=org_1", { key: project.key });
    expect(listed.json.data).toEqual([]);
  });

  it("writes one span per commit and a search entry per 16 of its events, instead of an id index entry and a search row per event", async () => {
    const project = await createProject();
    const event = { action: "probe.one", organization: "org_1", actor: { id: "u_1" }, targets: [{ type: "doc", id: "d_1" }] };
    expect((await call("POST", "/v1/events", { key: project.key, body: event })).status).toBe(201);
    resetMeterReport();
    const batch = await call("POST", "/v1/events/batch", { key: project.key, body: { events: Array.from({ length: 40 }, () => event) } });
    expect(batch.status).toBe(201);
    const { rows } = (await call("GET", "/__meter")).json.data;
    // 3 an event (the row, its actor index entry, its first target's (type, id) index entry: migration 0033), a search
    // entry per group of 16 it fills (migration 0031 and search-index.ts: the first event's group and the next one; the
    // last 9 stay open), 2 for the commit (its span, migration 0029, and the span's entry in the live spans' index, which
    // gives its live events their time instead of a time index entry each: migration 0040), 1 for the request's address,
    // which its 40 live events share (a live set, migration 0043, in place of 0038's run), 1 for their first target's
    // type, which they share too (migration 0039),
    // 1 for their action (migration 0041) and 1 for their organization (migration 0042), which they share too.
    expect(rows.d1Written).toBe(3 * 40 + Math.floor((1 + 40) / SEARCH_GROUP) + 2 + 1 + 1 + 1 + 1);
    const spans = await project.db.prepare("SELECT first_seq, last_seq, live FROM commit_spans WHERE project_id = ? ORDER BY first_seq").bind(project.id).all();
    expect(spans.results).toEqual([{ first_seq: 2, last_seq: 41, live: 1 }]);
    const timed = await project.db.prepare("SELECT time_in_span, count(*) AS n FROM events WHERE project_id = ? GROUP BY time_in_span").bind(project.id).all();
    expect(timed.results).toEqual([{ time_in_span: 0, n: 1 }, { time_in_span: 1, n: 40 }]);
    const runs = await project.db.prepare("SELECT count(*) AS n FROM ip_runs WHERE project_id = ?").bind(project.id).first<{ n: number }>();
    expect(runs!.n).toBe(0);
    const addresses = await project.db.prepare("SELECT first_seq, last_seq, json_array_length(seqs) AS n FROM address_sets WHERE project_id = ?").bind(project.id).all();
    expect(addresses.results).toEqual([{ first_seq: 2, last_seq: 41, n: 40 }]);
    const sets = await project.db.prepare("SELECT at, type, first_seq, last_seq FROM target_type_sets WHERE project_id = ?").bind(project.id).all();
    expect(sets.results).toEqual([{ at: 0, type: "doc", first_seq: 2, last_seq: 41 }]);
    const actions = await project.db.prepare("SELECT action, first_seq, last_seq, json_array_length(seqs) AS n FROM action_sets WHERE project_id = ?").bind(project.id).all();
    expect(actions.results).toEqual([{ action: "probe.one", first_seq: 2, last_seq: 41, n: 40 }]);
    const inSet = await project.db.prepare("SELECT action_in_set, count(*) AS n FROM events WHERE project_id = ? GROUP BY action_in_set").bind(project.id).all();
    expect(inSet.results).toEqual([{ action_in_set: 0, n: 1 }, { action_in_set: 1, n: 40 }]);
    const orgs = await project.db.prepare("SELECT organization, first_seq, last_seq, json_array_length(seqs) AS n FROM organization_sets WHERE project_id = ?").bind(project.id).all();
    expect(orgs.results).toEqual([{ organization: "org_1", first_seq: 2, last_seq: 41, n: 40 }]);
    const inOrgSet = await project.db.prepare("SELECT org_in_set, count(*) AS n FROM events WHERE project_id = ? GROUP BY org_in_set").bind(project.id).all();
    expect(inOrgSet.results).toEqual([{ org_in_set: 0, n: 1 }, { org_in_set: 1, n: 40 }]);
    // The first event, alone in its commit and live, is found at its id's instant and carries its append's name (0036, 0037).
    const unspanned = await project.db.prepare("SELECT seq, id_indexed, append_name IS NOT NULL AS named FROM events WHERE project_id = ? AND id_indexed <> 0").bind(project.id).all();
    expect(unspanned.results).toEqual([{ seq: 1, id_indexed: 2, named: 1 }]);
  });
});

describe("what archiving costs in billed rows", () => {
  it("writes no row per event for its id or its one target: the hot row goes, a search entry per group, and a few rows per segment are added", async () => {
    const project = await createProject();
    const event = { action: "probe.one", actor: { id: "u_1" }, targets: [{ type: "doc", id: "d_1" }] };
    expect((await call("POST", "/v1/events/batch", { key: project.key, body: { events: Array.from({ length: 40 }, () => event) } })).status).toBe(201);
    resetMeterReport();
    await archiveAll(project.id, 40);
    const { rows } = (await call("GET", "/__meter")).json.data;
    expect((await segmentsOf(project.db, project.id)).map((s) => [s.count, s.id_tag !== null])).toEqual([[40, true]]);
    const ids = await project.db.prepare("SELECT count(*) AS n FROM archive_ids WHERE project_id = ?").bind(project.id).first<{ n: number }>();
    expect(ids!.n).toBe(0);
    // 1 an event (issue 38 counted 5: archive_ids' row and index are gone, the search entry is one per 16 events, and
    // the one target is in index entries, whose deletes D1 does not bill), the search groups' entries, plus the
    // segment's index row and its summary, and the commit's span, address set, target type set and action set, which go
    // with their last event. (16, 16 and an open 8: two entries.)
    const perSegment = rows.d1Written - 40 - Math.floor(40 / SEARCH_GROUP) - 4;
    expect(perSegment).toBeGreaterThan(0);
    expect(perSegment).toBeLessThanOrEqual(9);
    const spans = await project.db.prepare("SELECT count(*) AS n FROM commit_spans WHERE project_id = ?").bind(project.id).first<{ n: number }>();
    expect(spans!.n).toBe(0);
    const runs = await project.db.prepare("SELECT (SELECT count(*) FROM ip_runs WHERE project_id = ?1) + (SELECT count(*) FROM address_sets WHERE project_id = ?1) AS n").bind(project.id).first<{ n: number }>();
    expect(runs!.n).toBe(0);
    const sets = await project.db.prepare("SELECT count(*) AS n FROM target_type_sets WHERE project_id = ?").bind(project.id).first<{ n: number }>();
    expect(sets!.n).toBe(0);
    const actionSets = await project.db.prepare("SELECT count(*) AS n FROM action_sets WHERE project_id = ?").bind(project.id).first<{ n: number }>();
    expect(actionSets!.n).toBe(0);
    console.log(`archiving 40 events: ${rows.d1Written} D1 rows written (${perSegment} for the segment)`);
  });

  it("writes no row for the id of an event that was alone in its commit: one event a request costs its row at archive, as a batch's events do", async () => {
    const project = await createProject();
    const event = { action: "probe.lone", actor: { id: "u_1" }, targets: [{ type: "doc", id: "d_1" }] };
    for (let i = 0; i < 20; i++) expect((await call("POST", "/v1/events", { key: project.key, body: event })).status).toBe(201);
    resetMeterReport();
    await archiveAll(project.id, 20);
    const { rows } = (await call("GET", "/__meter")).json.data;
    // Each event's row, the one full search group's entry, and the segment's few rows: no span per commit to delete.
    const perSegment = rows.d1Written - 20 - Math.floor(20 / SEARCH_GROUP);
    expect(perSegment).toBeGreaterThan(0);
    expect(perSegment).toBeLessThanOrEqual(9);
    // And every one of them is still found by id, now in the archive.
    const listed = await call("GET", "/v1/events?limit=20", { key: project.key });
    for (const e of listed.json.data) expect((await call("GET", `/v1/events/${e.id}`, { key: project.key })).json.data).toEqual(e);
    expect(listed.json.data).toHaveLength(20);
  });
});

describe("what the seq index costs, keyed or not (migration 0046)", () => {
  const event = { action: "probe.seq", organization: "org_s", actor: { id: "u_s" }, targets: [{ type: "doc", id: "d_s" }] };

  async function ingestWritten(key: string): Promise<number> {
    resetMeterReport();
    expect((await call("POST", "/v1/events/batch", { key, body: { events: Array.from({ length: 4 }, () => event) } })).status).toBe(201);
    return (await call("GET", "/__meter")).json.data.rows.d1Written;
  }

  it("writes a seq index entry an event only for a project made before keys", async () => {
    const keyed = await createProject();
    const older = await createProject(undefined, { keyed: false });
    for (const p of [keyed, older]) expect((await call("POST", "/v1/events", { key: p.key, body: event })).status).toBe(201);
    expect((await ingestWritten(older.key)) - (await ingestWritten(keyed.key))).toBe(4);
  });

  it("reads a few rows to tidy a commit's span and sets when a keyed row goes, however many rows its shard holds", async () => {
    // Another project's 3,000 rows on the seq index, beside a keyed project's commit of 4 (a span and a set of each kind).
    const older = await createProject(undefined, { keyed: false });
    const now = new Date().toISOString();
    const rows = Array.from({ length: 3000 }, (_, i) => [crypto.randomUUID(), older.id, i + 1, now]);
    await older.db
      .prepare(
        "INSERT INTO events (row_id, id, project_id, seq, action, targets, metadata, occurred_at, received_at, pii_commitment, hash) " +
          `SELECT ${handRowId("?2", "value ->> 2", "key")}, value ->> 0, value ->> 1, value ->> 2, 'probe.seq', '[]', '{}', value ->> 3, value ->> 3, '', '' FROM json_each(?1)`,
      )
      .bind(JSON.stringify(rows), older.id)
      .run();
    const keyed = await createProject(undefined, { shard: older.shard });
    await ingestWritten(keyed.key);
    const held = () => keyed.db.prepare("SELECT (SELECT count(*) FROM commit_spans WHERE project_id = ?1) + (SELECT count(*) FROM action_sets WHERE project_id = ?1) AS n").bind(keyed.id).first<{ n: number }>();
    expect((await held())!.n).toBe(2);
    const ids = await keyed.db.prepare("SELECT row_id FROM events WHERE project_id = ? ORDER BY seq").bind(keyed.id).all<{ row_id: number }>();
    for (const [i, { row_id }] of ids.results.entries()) {
      const { meta } = await keyed.db.prepare("DELETE FROM events WHERE row_id = ?").bind(row_id).run();
      expect(meta.rows_read, `the delete of row ${i + 1}`).toBeLessThan(100);
    }
    expect((await held())!.n).toBe(0);
  });
});
