import { describe, expect, it } from "vitest";
import { COLUMNS } from "../../src/chain/event-insert";
import { insertEventsStatements } from "../../src/chain/event-insert";
import { decodeCursor, type Cursor } from "../../src/model/cursor";
import { selectionFor, type Selection } from "../../src/model/event-query";
import { INDEXING_COLUMNS } from "../../src/model/row-indexing";
import { armDb, dropPeriod, makePeriod, PERIOD_OBJECTS, PERIOD_SCHEMA_SQL, PERIOD_TABLES, type Arm } from "../../src/model/periods";
import { listEvents } from "../../src/reads/event-read";
import type { EventRow } from "../../src/db/schema";
import { call, createProject, expectEveryListing, ingestMany, listOrder, listPages, moveIntoPeriod, testArm } from "../helpers";


/** Every page of a selection's list, its seqs in list order. */
async function listed(db: D1Database, rowKey: number | null, sel: Selection, limit: number): Promise<number[]> {
  const seqs: number[] = [];
  let cursor: Cursor | null = null;
  for (;;) {
    const page = await listEvents(db, rowKey, sel, cursor, limit);
    seqs.push(...page.rows.map((r) => r.seq));
    if (page.nextCursor === null) return seqs;
    cursor = decodeCursor(page.nextCursor);
  }
}

describe("periods: a shard's hot events in tables of their own", () => {
  it("copies every table, index and trigger an event's rows live in, and only those", async () => {
    const p = await createProject();
    const { results } = await p.db.prepare(PERIOD_SCHEMA_SQL).all<{ name: string }>();
    // FTS5's own tables come with the search index's virtual table.
    const names = results.map((o) => o.name).filter((n) => !/^events_search_(data|idx|docsize|config|content)$/.test(n));
    expect(names.sort()).toEqual([...PERIOD_TABLES, ...PERIOD_OBJECTS].sort());
  });

  it("holds a commit written through the commit's own statements, read through the lists' own, and drops for no billed row", async () => {
    const p = await createProject();
    const live = (i: number) => ({
      action: i % 3 === 0 ? "doc.read" : "doc.write",
      organization: `org_${i % 2}`,
      actor: { id: `u${i % 4}`, name: `User ${i}` },
      targets: [{ type: i % 2 ? "doc" : "folder", id: `t${i}` }],
    });
    for (let c = 0; c < 4; c++) await ingestMany(p.key, Array.from({ length: 6 }, (_, i) => live(c * 6 + i)), { ip: c % 2 ? "10.0.0.1" : "10.0.0.2" });
    const rowKey = (await p.db.prepare("SELECT n FROM project_keys WHERE project_id = ?").bind(p.id).first<{ n: number }>())!.n;
    const selections = ["", "action=doc.read", "organization=org_1", "actor_id=u2", "ip_address=10.0.0.1", "target_type=doc", "actions_exclude=doc.write"].map((q) => {
      const filters = Object.fromEntries(new URLSearchParams(q));
      if (filters.actions_exclude) filters.actions_exclude = filters.actions_exclude.split(",") as never;
      return [q, selectionFor({ kind: "api_key", projectId: p.id }, filters)!] as const;
    });
    const before = new Map<string, number[]>();
    for (const [q, sel] of selections) before.set(q, await listed(p.db, rowKey, sel, 4));
    expect(before.get("")).toHaveLength(24);

    // The project's rows leave the main tables and go into a period, written by the commit's own statements.
    const arm: Arm = testArm();
    await makePeriod(p.db, arm);
    const stored = COLUMNS.filter((c) => !(INDEXING_COLUMNS as readonly string[]).includes(c));
    const { results: rows } = await p.db.prepare(`SELECT ${stored.join(", ")} FROM events WHERE project_id = ? ORDER BY seq`).bind(p.id).all<EventRow>();
    await p.db.prepare("DELETE FROM events WHERE project_id = ?").bind(p.id).run();
    const period = armDb(p.db, arm);
    await p.db.batch(insertEventsStatements(period, rows));

    expect(await listed(p.db, rowKey, selections[0][1], 4)).toEqual([]);
    for (const [q, sel] of selections) expect(await listed(period, rowKey, sel, 4), q).toEqual(before.get(q));
    const count = await period.prepare("SELECT count(*) AS n FROM events WHERE project_id = ?").bind(p.id).first<{ n: number }>();
    expect(count!.n).toBe(24);

    // Dropped whole: D1 bills the one row of its name in `periods`, none for the rows it held.
    expect(await dropPeriod(p.db, arm)).toBe(1);
    const left = await p.db.prepare("SELECT name FROM sqlite_master WHERE name LIKE ?").bind(`%_p${arm}`).all();
    expect(left.results).toEqual([]);
  });

  it("lists, searches and gets a project's events split between the main tables and a period as it would from one", async () => {
    const p = await createProject();
    // Made before the project's first read, as a period is made well before any row is written to it.
    const arm: Arm = testArm();
    await makePeriod(p.db, arm);
    const input = (i: number) => ({
      action: i % 3 === 0 ? "doc.read" : "doc.write",
      organization: `org_${i % 2}`,
      actor: { id: `u${i % 4}`, name: `Member ${i + 1}` },
      targets: [{ type: i % 2 ? "doc" : "folder", id: `t${i}` }],
    });
    const sent: Array<{ seq: number; occurred_at: string; id: string; action: string; organization: string; actor: string; ip: string; type: string }> = [];
    for (let c = 0; c < 4; c++) {
      const ip = c % 2 ? "10.0.0.1" : "10.0.0.2";
      const stored = await ingestMany(p.key, Array.from({ length: 6 }, (_, i) => input(c * 6 + i)), { ip });
      for (const [i, e] of stored.entries()) {
        const x = input(c * 6 + i);
        sent.push({ seq: e.seq, occurred_at: e.occurred_at, id: e.id, action: x.action, organization: x.organization, actor: x.actor.id, ip, type: x.targets[0].type });
      }
    }
    // The last two commits move into the period, written by the commit's own statements.
    expect(await moveIntoPeriod(p.db, p.id, arm, 12, 6)).toBe(12);

    await expectEveryListing(p.key, sent, [
      ["", () => true],
      ["action=doc.read", (e) => e.action === "doc.read"],
      ["organization=org_1", (e) => e.organization === "org_1"],
      ["actor_id=u2", (e) => e.actor === "u2"],
      ["ip_address=10.0.0.1", (e) => e.ip === "10.0.0.1"],
      ["target_type=doc", (e) => e.type === "doc"],
      ["actions_exclude=doc.write", (e) => e.action !== "doc.write"],
    ]);
    expect(await listPages(p.key, "/v1/events/search", "q=member", 5)).toEqual(listOrder(sent, () => true));
    expect(await listPages(p.key, "/v1/events/search", "q=member%2017", 5)).toEqual([17]);
    expect(await listPages(p.key, "/v1/events/search", "q=member%2011", 5)).toEqual([11]);
    for (const seq of [3, 20]) {
      const got = await call("GET", `/v1/events/${sent[seq - 1].id}`, { key: p.key });
      expect(got.status, got.text).toBe(200);
      expect(got.json.data.seq).toBe(seq);
    }

    // A period dropped after this isolate listed it: the read lists the shard's periods again.
    await dropPeriod(p.db, arm);
    expect(await listPages(p.key, "/v1/events", "", 50)).toEqual(listOrder(sent, (e) => e.seq <= 12));
  });
});
