import { describe, expect, it } from "vitest";
import { COLUMNS } from "../../src/chain/event-insert";
import { insertEventsStatements } from "../../src/chain/event-insert";
import { decodeCursor, type Cursor } from "../../src/model/cursor";
import { selectionFor, type Selection } from "../../src/model/event-query";
import { INDEXING_COLUMNS } from "../../src/model/row-indexing";
import { armCeiling, armDb, armGrace, ARM_HELD_MS, armSpans, D1_MAX_PARAMS, dropPeriod, makePeriod, overArms, PERIOD_LOW_SQL, PERIOD_MS, paramStyle, PERIOD_OBJECTS, PERIOD_SCHEMA_SQL, PERIOD_TABLES, type Arm } from "../../src/model/periods";
import { listEvents } from "../../src/reads/event-read";
import type { EventRow } from "../../src/db/schema";
import { call, createProject, expectEveryListing, ingestMany, listOrder, listPages, moveIntoPeriod, testArm } from "../helpers";


/** `db`, counting the statements sent to D1 (alone or in a batch). */
function counted(db: D1Database): { db: D1Database; sent: () => number } {
  let sent = 0;
  const real = new WeakMap<object, D1PreparedStatement>();
  const wrap = (statement: D1PreparedStatement): D1PreparedStatement => {
    const wrapper = {
      bind: (...values: unknown[]) => wrap(statement.bind(...values)),
      all: () => (sent++, statement.all()),
      run: () => (sent++, statement.run()),
      first: (column?: string) => (sent++, column === undefined ? statement.first() : statement.first(column)),
      raw: () => (sent++, statement.raw()),
    };
    real.set(wrapper, statement);
    return wrapper as unknown as D1PreparedStatement;
  };
  const wrapped = {
    prepare: (sql: string) => wrap(db.prepare(sql)),
    batch: (statements: D1PreparedStatement[]) => ((sent += statements.length), db.batch(statements.map((s) => real.get(s) ?? s))),
  };
  return { db: wrapped as unknown as D1Database, sent: () => sent };
}

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

  it("reads where a project's rows lie in its settled periods, from where a current period past its first hour holds them, and below what last week's in its grace does", async () => {
    const p = await createProject();
    const older = testArm();
    const current = older + 1;
    for (const n of [older, current]) await makePeriod(p.db, n);
    try {
      const at = (day: number) => new Date(Date.UTC(2026, 2, day, 12)).toISOString();
      const send = async (days: number[]) => (await ingestMany(p.key, days.map((d) => ({ action: "doc.read", occurred_at: at(d) }))))[0].seq - 1;
      expect(await moveIntoPeriod(p.db, p.id, older, await send([3, 1, 2]))).toBe(3);
      expect(await moveIntoPeriod(p.db, p.id, current, await send([9, 8]))).toBe(2);
      const spans = (now: number, projectId = p.id) => armSpans(p.db, projectId, [older, current], now, 30_000, PERIOD_MS);
      // A day and a moment into the current period: the older one is settled, its span read; the current one is
      // growing, no upper bound, its rows from its lowest occurred_at up, and past its first day it says from where
      // it held rows.
      const past = current * PERIOD_MS + armGrace(PERIOD_MS) + 1;
      // A settled period's facts too: its rows of the project name one target each, and no set holds them.
      expect(await spans(past)).toEqual([
        { arm: older, hi: at(3), lo: at(1), growing: false, facts: { setActions: [], laterTargets: false } },
        { arm: current, hi: null, lo: null, growing: true, from: at(8), heldFrom: at(8) },
      ]);
      // In its first day both are growing: the older one, within its grace, holds its whole week, and no row above
      // its end and the skews (its ceiling) however many land; the current one, not an hour old, says no more than
      // its lowest, and from its first hour, from where it holds rows.
      const ceiling = armCeiling(older, PERIOD_MS);
      expect(ceiling).toBe(new Date(current * PERIOD_MS + 6 * 60_000).toISOString());
      expect(await spans(current * PERIOD_MS + 60_000)).toEqual([
        { arm: older, hi: null, lo: null, growing: true, from: at(1), heldFrom: at(1), ceiling },
        { arm: current, hi: null, lo: null, growing: true, from: at(8) },
      ]);
      expect(await spans(current * PERIOD_MS + ARM_HELD_MS)).toEqual([
        { arm: older, hi: null, lo: null, growing: true, from: at(1), heldFrom: at(1), ceiling },
        { arm: current, hi: null, lo: null, growing: true, from: at(8), heldFrom: at(8) },
      ]);
      // A project with no row in them: nothing held, in either.
      expect(await spans(past, "nobody")).toEqual([
        { arm: older, hi: null, lo: null, growing: false },
        { arm: current, hi: null, lo: null, growing: true, from: null },
      ]);

      // A period's low mark (a commit's lowest occurred_at) says it holds rows from there, if below its span's.
      const lower = async (projectId: string, day: number) => (await p.db.prepare(PERIOD_LOW_SQL).bind(projectId, current, at(day)).run()).meta.rows_written;
      expect(await lower(p.id, 5)).toBe(1);
      // A commit that reaches no lower writes nothing: D1 bills no row for it.
      expect(await lower(p.id, 7)).toBe(0);
      expect(await lower("nobody", 9)).toBe(1);
      expect((await spans(past)).map((s) => s.from)).toEqual([undefined, at(5)]);
      expect((await spans(past, "nobody")).map((s) => s.from)).toEqual([undefined, at(9)]);
    } finally {
      for (const n of [older, current]) await dropPeriod(p.db, n);
    }
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

  it("sends the same statement of every arm as one D1 statement, each arm answered with its own rows", async () => {
    const p = await createProject();
    const [a, b] = [testArm(), testArm()];
    // Eleven arms in all: D1 takes at most five terms in a compound SELECT.
    const empty = Array.from({ length: 8 }, () => testArm());
    for (const n of [a, b, ...empty]) await makePeriod(p.db, n);
    await ingestMany(p.key, Array.from({ length: 24 }, (_, i) => ({ action: i % 2 ? "doc.read" : "doc.write", actor: { id: `u${i}` } })));
    expect(await moveIntoPeriod(p.db, p.id, b, 16)).toBe(8);
    expect(await moveIntoPeriod(p.db, p.id, a, 8)).toBe(8);
    const arms: Arm[] = [null, ...empty.slice(0, 4), a, ...empty.slice(4), b];
    const mine = (answers: unknown[]) => [answers[0], answers[5], answers[10]];
    const none = (answers: unknown[]) => [...answers.slice(1, 5), ...answers.slice(6, 10)];
    const alone = <T>(read: (db: D1Database) => Promise<T>) => Promise.all(arms.map((n) => read(armDb(p.db, n))));
    const seqs = (rows: { results: { seq: number }[] }) => rows.results.map((r) => r.seq);
    try {
      // Plain parameters, a quoted '?' among them; each arm's newest three, in its own order.
      const newest = (db: D1Database) => db.prepare("SELECT seq, action FROM events WHERE project_id = ? AND action <> '?' ORDER BY seq DESC LIMIT ?").bind(p.id, 3).all<{ seq: number }>().then(seqs);
      const c1 = counted(p.db);
      const together = await overArms(c1.db, newest, arms);
      expect(mine(together)).toEqual([[8, 7, 6], [16, 15, 14], [24, 23, 22]]);
      expect(none(together)).toEqual(empty.map(() => []));
      expect(c1.sent()).toBe(1);
      expect(await alone(newest)).toEqual(together);
      // Numbered ones, one of them used twice; first() takes each arm's first row.
      const firstAfter = (db: D1Database) => db.prepare("SELECT seq FROM events WHERE project_id = ?1 AND seq > ?2 AND seq <> ?2 + 1 AND action = ?3 ORDER BY seq").bind(p.id, 4, "doc.read").first<{ seq: number }>("seq");
      const c2 = counted(p.db);
      const firsts = await overArms(c2.db, firstAfter, arms);
      expect(mine(firsts)).toEqual([6, 10, 18]);
      expect(none(firsts)).toEqual(empty.map(() => null));
      expect(c2.sent()).toBe(1);
      // Two steps, each the arms' statements at once: one D1 statement a step.
      const c3 = counted(p.db);
      const twoSteps = async (db: D1Database) => [await newest(db), await firstAfter(db)];
      expect(mine(await overArms(c3.db, twoSteps, arms))).toEqual([[[8, 7, 6], 6], [[16, 15, 14], 10], [[24, 23, 22], 18]]);
      expect(c3.sent()).toBe(2);
      // Past D1's 100 parameters together: each arm's statement goes alone, in one batch, with the same answers.
      const many = Array.from({ length: 40 }, (_, i) => i + 1);
      const listedIn = (db: D1Database) => db.prepare(`SELECT seq FROM events WHERE project_id = ? AND seq IN (${many.map(() => "?").join(", ")}) ORDER BY seq`).bind(p.id, ...many).all<{ seq: number }>().then(seqs);
      const c4 = counted(p.db);
      const inArms = mine(await overArms(c4.db, listedIn, arms)) as number[][];
      expect(inArms.map((r) => r.length)).toEqual([8, 8, 8]);
      expect(inArms.flat()).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
      expect(c4.sent()).toBe(arms.length);
      expect(arms.length * 41).toBeGreaterThan(D1_MAX_PARAMS);
    } finally {
      for (const n of [a, b, ...empty]) await dropPeriod(p.db, n);
    }
  });

  it("reads a statement's parameters outside its quoted text and comments", () => {
    expect(paramStyle("SELECT * FROM events WHERE a = ? AND b = '?' AND c = ? -- d = ?\n")).toEqual({ numbered: false, count: 2 });
    expect(paramStyle('SELECT "?1" FROM events WHERE a = ?1 AND b = ?3 AND c = ?1')).toEqual({ numbered: true, count: 3 });
    expect(paramStyle("SELECT 1 WHERE a = ? AND b = ?2")).toBeNull();
    expect(paramStyle("SELECT 1 WHERE a = :a")).toBeNull();
    expect(paramStyle("SELECT json_extract(x, '$.a') FROM t WHERE a = ?")).toEqual({ numbered: false, count: 1 });
  });
});
