import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/lib/crypto";
import { decodeCursor, type Cursor } from "../../src/model/cursor";
import type { Selection } from "../../src/model/event-query";
import { armSpans, dropPeriod, makePeriod, mergePages, overArms, PERIOD_MS, type Arm, type ArmFacts, type ArmSpan } from "../../src/model/periods";
import { FIRST_WINDOW, listEvents, listEventsOverArms, RARE_HITS, searchTuning, type Page } from "../../src/reads/event-read";
import { projectRowKey } from "../../src/storage/shards";
import { EXPORT_BATCH, exportTuning } from "../../src/reads/export-stream";
import { BASE, call, createProject, expectEveryListing, ingestMany, listOrder, listPages, moveIntoPeriod, pastArm } from "../helpers";

/** GET /v1/exports' events, in the order it wrote them. */
async function exported(key: string, query: string): Promise<number[]> {
  const res = await exports.default.fetch(new Request(`${BASE}/v1/exports?format=json${query}`, { headers: { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "10.9.9.9" } }));
  expect(res.status).toBe(200);
  return (JSON.parse(await res.text()) as Array<{ seq: number }>).map((e) => e.seq);
}

type Sent = { seq: number; occurred_at: string; name: string };

/** Sends actors named `names` to project `p`, backdated into `month` of 2025 (null: happening when received), moved into `arm` (null: left in the main tables), and notes each in `sent`. */
function sender(p: Awaited<ReturnType<typeof createProject>>, sent: Sent[]) {
  return async (arm: number | null, month: number | null, names: string[]) => {
    const stored = await ingestMany(p.key, names.map((name, i) => ({ action: "doc.read", actor: { id: `u${i}`, name }, ...(month === null ? {} : { occurred_at: new Date(Date.UTC(2025, month, 1, 12, i)).toISOString() }) })));
    stored.forEach((e, i) => sent.push({ seq: e.seq, occurred_at: e.occurred_at, name: names[i] }));
    if (arm !== null) expect(await moveIntoPeriod(p.db, p.id, arm, stored[0].seq - 1)).toBe(names.length);
  };
}

/**
 * Every page of `sel` read by listEventsOverArms over `over` (arms, with a settled one's facts), its rows' seqs in
 * list order; each page one statement; `same`: each page's rows and cursor as read arm by arm.
 */
async function pagesTogether(db: D1Database, over: Array<{ arm: Arm; facts?: ArmFacts }>, rowKey: number | null, sel: Selection, limit: number, same: boolean): Promise<number[]> {
  const listed: number[] = [];
  let cursor: Cursor | null = null;
  do {
    let statements = 0;
    const counted = { prepare: (sql: string) => (statements++, db.prepare(sql)) } as unknown as D1Database;
    const together: Page = mergePages((await listEventsOverArms(counted, over, rowKey, sel, cursor, limit))!, limit);
    expect(statements, "one statement for every arm").toBe(1);
    if (same) {
      const after: Cursor | null = cursor;
      const alone = mergePages(await overArms(db, (arm) => listEvents(arm, rowKey, sel, after, limit), over.map((a) => a.arm)), limit);
      expect(together.rows.map((r) => r.seq)).toEqual(alone.rows.map((r) => r.seq));
      expect(together.nextCursor).toEqual(alone.nextCursor);
    }
    listed.push(...together.rows.map((r) => r.seq));
    cursor = together.nextCursor === null ? null : decodeCursor(together.nextCursor);
  } while (cursor !== null);
  return listed;
}

describe("reads over arms: each page from the arms that can hold it", () => {
  it("lists, searches and gets a project's events in past periods and the main tables as from one table", async () => {
    const p = await createProject();
    // Periods long past, so settled: no row can land in them.
    const older = pastArm();
    const [newer, empty] = [older + 100, older + 200];
    for (const n of [older, newer, empty]) await makePeriod(p.db, n);
    try {
      const input = (i: number, month: number | null) => ({
        action: i % 3 === 0 ? "doc.read" : "doc.write",
        actor: { id: `u${i % 4}`, name: `Member ${i + 1}` },
        targets: [{ type: i % 2 ? "doc" : "folder", id: `t${i}` }],
        // Backdated into January and June; the last twelve happen when received.
        ...(month === null ? {} : { occurred_at: new Date(Date.UTC(2026, month, 1 + (i % 12), 10, i)).toISOString() }),
      });
      const sent: Array<{ seq: number; occurred_at: string; id: string; action: string; actor: string; type: string }> = [];
      const send = async (from: number, month: number | null) => {
        const events = Array.from({ length: 12 }, (_, k) => input(from + k, month));
        const stored = await ingestMany(p.key, events);
        stored.forEach((e, k) => sent.push({ seq: e.seq, occurred_at: e.occurred_at, id: e.id, action: events[k].action, actor: events[k].actor.id, type: events[k].targets[0].type }));
        return stored[0].seq - 1;
      };
      // Written by the commit's own statements into each period, as the ledger writes them.
      expect(await moveIntoPeriod(p.db, p.id, older, await send(0, 0))).toBe(12);
      expect(await moveIntoPeriod(p.db, p.id, newer, await send(12, 5))).toBe(12);
      await send(24, null);

      await expectEveryListing(p.key, sent, [
        ["", () => true],
        ["action=doc.read", (e) => e.action === "doc.read"],
        ["actor_id=u2", (e) => e.actor === "u2"],
        ["target_type=doc", (e) => e.type === "doc"],
        ["date_from=2026-05-01T00:00:00Z", (e) => e.occurred_at >= "2026-05-01"],
      ]);
      expect(await listPages(p.key, "/v1/events/search", "q=member", 5)).toEqual(listOrder(sent, () => true));
      expect(await listPages(p.key, "/v1/events/search", "q=member%2017", 2)).toEqual([sent[16].seq]);
      expect(await listPages(p.key, "/v1/events/search", "q=member%2011", 2)).toEqual([sent[10].seq]);
      expect(await listPages(p.key, "/v1/events/search", "q=member%2029", 2)).toEqual([sent[28].seq]);
      for (const e of [sent[2], sent[14], sent[30]]) {
        const got = await call("GET", `/v1/events/${e.id}`, { key: p.key });
        expect(got.status, got.text).toBe(200);
        expect(got.json.data.seq).toBe(e.seq);
      }
      // Exports page by the same spans: pages of 5, so pages end inside each arm and across them.
      exportTuning.batch = 5;
      try {
        expect(await exported(p.key, "")).toEqual(listOrder(sent, () => true));
        expect(await exported(p.key, "&actor_id=u2")).toEqual(listOrder(sent, (e) => e.actor === "u2"));
        expect(await exported(p.key, "&date_to=2026-05-01T00:00:00Z")).toEqual(listOrder(sent, (e) => e.occurred_at <= "2026-05-01"));
      } finally {
        exportTuning.batch = EXPORT_BATCH;
      }
    } finally {
      for (const n of [older, newer, empty]) await dropPeriod(p.db, n);
    }
  });

  it("reads an actor's page in every arm in one statement, the same pages as arm by arm, and goes on past rows an erasure hides", async () => {
    const p = await createProject();
    const oldest = pastArm();
    // Six arms: more than D1's five terms to a compound, so the merge goes in groups.
    const arms: Arm[] = [null, ...[0, 100, 200, 300, 400].map((k) => oldest + k)];
    for (const n of arms.slice(1)) await makePeriod(p.db, n!);
    try {
      // Each arm holds u1's events of January, March and May, on a day of its own: in list order they take turns.
      const sent: Array<{ seq: number; occurred_at: string; actor: string }> = [];
      for (const [k, arm] of arms.entries()) {
        const events = Array.from({ length: 6 }, (_, i) => ({ action: "doc.read", actor: { id: i % 2 ? "u2" : "u1" }, occurred_at: new Date(Date.UTC(2025, i, 1 + k, 12)).toISOString() }));
        const stored = await ingestMany(p.key, events);
        stored.forEach((e, i) => sent.push({ seq: e.seq, occurred_at: e.occurred_at, actor: events[i].actor.id }));
        if (arm !== null) expect(await moveIntoPeriod(p.db, p.id, arm, stored[0].seq - 1)).toBe(6);
      }
      const rowKey = await projectRowKey(env, p.id);
      const sel: Selection = { projectId: p.id, organization: null, actorId: "u1", ipAddress: null, dateFrom: null, dateTo: null, actions: null, exclude: [] };
      const walk = (limit: number, same: boolean) => pagesTogether(p.db, arms.map((arm) => ({ arm })), rowKey, sel, limit, same);
      for (const limit of [1, 2, 5, 50]) expect(await walk(limit, true), `pages of ${limit}`).toEqual(listOrder(sent, (e) => e.actor === "u1"));
      // An erasure of u1 accepted and not yet applied: its rows up to the second arm's are served scrubbed, so a list
      // by u1 leaves them out. A page cut among them holds fewer rows, and the next goes on below them.
      const through = sent[11].seq;
      await p.db
        .prepare("INSERT INTO pending_erasures (project_id, erasure_id, by, subject_sha256, organization, erased_at, through_seq) VALUES (?, 1, 'id', ?, NULL, ?, ?)")
        .bind(p.id, await sha256Hex("id:u1"), new Date().toISOString(), through)
        .run();
      const left = listOrder(sent, (e) => e.actor === "u1" && e.seq > through);
      expect(left).toHaveLength(12);
      for (const limit of [1, 2, 5, 50]) expect(await walk(limit, false), `pages of ${limit}, some scrubbed`).toEqual(left);
      expect(await listPages(p.key, "/v1/events", "actor_id=u1", 2)).toEqual(left);
    } finally {
      for (const n of arms.slice(1)) await dropPeriod(p.db, n!);
    }
  });

  it("reads a rare action's and a target id's pages by one index in place where a settled period's facts allow, merged, and never leaves out a row of its sets or later targets", async () => {
    const p = await createProject();
    const oldest = pastArm();
    // Six arms: the main tables (growing: the project commits there) and five settled periods.
    const periods = [0, 100, 200, 300, 400].map((k) => oldest + k);
    const arms: Arm[] = [null, ...periods];
    for (const n of periods) await makePeriod(p.db, n);
    try {
      type Target = { type: string; id: string };
      const sent: Array<{ seq: number; occurred_at: string; action: string; targets: Target[] }> = [];
      const d1 = { type: "doc", id: "d1" };
      const [f1, f2] = [{ type: "folder", id: "f1" }, { type: "folder", id: "f2" }];
      /** Events of `shapes` ([action, targets]), backdated to days of `month` in 2025 (null: happening when received, in one commit: the live rows sets hold), moved into `arm` (null: left in the main tables). */
      const send = async (arm: Arm, month: number | null, shapes: Array<[string, Target[]]>) => {
        const events = shapes.map(([action, targets], i) => ({ action, targets, ...(month === null ? {} : { occurred_at: new Date(Date.UTC(2025, month, 1 + i, 12)).toISOString() }) }));
        const stored = await ingestMany(p.key, events);
        stored.forEach((e, i) => sent.push({ seq: e.seq, occurred_at: e.occurred_at, action: shapes[i][0], targets: shapes[i][1] }));
        if (arm !== null) expect(await moveIntoPeriod(p.db, p.id, arm, stored[0].seq - 1)).toBe(shapes.length);
      };
      const rare = (n: number, targets: Target[] = [d1]): Array<[string, Target[]]> => Array.from({ length: n }, () => ["key.rotated", targets]);
      // Both walks in place: the action has no set there, no event names a second target.
      await send(periods[0], 0, [...rare(2), ["doc.read", [f1]], ...rare(1, [f2])]);
      // Live: sets of both actions, whose rows the action's index does not hold. The target's walk is in place.
      await send(periods[1], null, [...rare(4), ["doc.read", [f1]], ["doc.read", [f1]], ["doc.read", [d1]]]);
      // A second target and a third (event_targets): the target's walk is not in place, the action's is.
      await send(periods[2], 2, [...rare(1, [f1, d1]), ["doc.read", [f1, f2, d1]], ...rare(1), ["doc.read", [d1]]]);
      await send(periods[3], 4, [...rare(3), ["doc.read", [d1]]]);
      await send(periods[4], 6, [...rare(2, [f1]), ["doc.read", [d1]], ...rare(1)]);
      await send(null, 8, [...rare(2), ["doc.read", [d1]]]);

      // What the settled periods hold, read with their spans; the main tables are growing, and have none.
      const spans: ArmSpan[] = await armSpans(p.db, p.id, arms, Date.now(), 30_000, PERIOD_MS);
      expect(spans.map((s) => s.facts)).toEqual([
        undefined,
        { setActions: [], laterTargets: false },
        { setActions: ["doc.read", "key.rotated"], laterTargets: false },
        { setActions: [], laterTargets: true },
        { setActions: [], laterTargets: false },
        { setActions: [], laterTargets: false },
      ]);
      const rowKey = await projectRowKey(env, p.id);
      const none: Selection = { projectId: p.id, organization: null, actorId: null, ipAddress: null, dateFrom: null, dateTo: null, actions: null, exclude: [] };
      const walk = (sel: Selection, over: ArmSpan[], limit: number, same: boolean) => pagesTogether(p.db, over, rowKey, sel, limit, same);
      const action: Selection = { ...none, actions: ["key.rotated"] };
      const target: Selection = { ...none, targetType: "doc", targetId: "d1" };
      const ofAction = listOrder(sent, (e) => e.action === "key.rotated");
      const ofTarget = listOrder(sent, (e) => e.targets.some((t) => t.type === "doc" && t.id === "d1"));
      expect([ofAction.length, ofTarget.length]).toEqual([17, 20]);
      for (const limit of [1, 2, 5, 50]) {
        expect(await walk(action, spans, limit, true), `the action, pages of ${limit}`).toEqual(ofAction);
        expect(await walk(target, spans, limit, true), `the target, pages of ${limit}`).toEqual(ofTarget);
      }
      // Without facts, neither is one walk in place anywhere: read an arm at a time.
      expect(await listEventsOverArms(p.db, arms.map((arm) => ({ arm })), rowKey, action, null, 5)).toBeNull();
      expect(await listEventsOverArms(p.db, arms.map((arm) => ({ arm })), rowKey, target, null, 5)).toBeNull();
      // The pages need the facts as read: taken for an arm of neither sets nor later targets, the second period's set
      // rows and the third's later targets would be left out.
      const blind = spans.map((s) => (s.facts === undefined ? s : { ...s, facts: { setActions: [], laterTargets: false } }));
      expect((await walk(action, blind, 50, false)).length).toBe(ofAction.length - 4);
      expect((await walk(target, blind, 50, false)).length).toBe(ofTarget.length - 2);
      // And through the API, as a client pages them.
      expect(await listPages(p.key, "/v1/events", "action=key.rotated", 3)).toEqual(ofAction);
      expect(await listPages(p.key, "/v1/events", "target_type=doc&target_id=d1", 3)).toEqual(ofTarget);
    } finally {
      for (const n of periods) await dropPeriod(p.db, n);
    }
  });

  it("goes on past a page that ends empty above a period it left unread, in lists and exports", async () => {
    const p = await createProject();
    const oldest = pastArm();
    const [older, newer] = [oldest + 100, oldest + 200];
    for (const n of [oldest, older, newer]) await makePeriod(p.db, n);
    try {
      const at = (month: number, day: number) => new Date(Date.UTC(2025, month, day, 12)).toISOString();
      const send = async (action: string, times: string[]) => (await ingestMany(p.key, times.map((occurred_at) => ({ action, occurred_at })))).map((e) => e.seq);
      // The action's rows: two in the oldest period (October), one in the main tables backdated to January, none in
      // the two periods between. Its first page of 2 finds the January row with the newest period, reads the next
      // period down for more (nothing there) and ends above the oldest one, before the January row: empty.
      const first = await send("doc.rare", [at(9, 3), at(9, 2)]);
      expect(await moveIntoPeriod(p.db, p.id, oldest, first[0] - 1)).toBe(2);
      const middle = await send("doc.read", [at(11, 5), at(11, 4)]);
      expect(await moveIntoPeriod(p.db, p.id, older, middle[0] - 1)).toBe(2);
      const late = await send("doc.read", [new Date(Date.UTC(2026, 2, 1)).toISOString()]);
      expect(await moveIntoPeriod(p.db, p.id, newer, late[0] - 1)).toBe(1);
      const [main] = await send("doc.rare", [at(0, 2)]);
      const want = [first[0], first[1], main];

      const res = await call("GET", "/v1/events?action=doc.rare&limit=2", { key: p.key });
      expect(res.status, res.text).toBe(200);
      expect(res.json.data, "the first page ends above the unread period").toEqual([]);
      expect(res.json.nextCursor).toBe(`${at(9, 3)}~999999999999999`);
      expect(await listPages(p.key, "/v1/events", "action=doc.rare", 2)).toEqual(want);
      exportTuning.batch = 2;
      try {
        expect(await exported(p.key, "&action=doc.rare")).toEqual(want);
      } finally {
        exportTuning.batch = EXPORT_BATCH;
      }
    } finally {
      for (const n of [oldest, older, newer]) await dropPeriod(p.db, n);
    }
  });

  it("searches on in the periods below newer ones that ran out, the term rare there or common", async () => {
    const p = await createProject();
    const oldest = pastArm();
    const [older, newer] = [oldest + 100, oldest + 200];
    for (const n of [oldest, older, newer]) await makePeriod(p.db, n);
    try {
      const sent: Sent[] = [];
      const send = sender(p, sent);
      const of = (k: number, name: string) => Array.from({ length: k }, (_, i) => (i % 5 === 2 ? name : "plain member"));
      // Kestrel: once in the main tables and once in the newest period, which a page of 3 reads first and which run
      // out; then in every event of the older period, its search groups many. Osprey: only in the two oldest.
      await send(oldest, 0, [...of(20, "osprey"), "kestrel one"]);
      await send(older, 3, [...Array.from({ length: 40 }, () => "kestrel"), "osprey"]);
      await send(newer, 8, [...of(10, "plain"), "kestrel two"]);
      await send(null, null, ["kestrel three"]);
      const holding = (term: string) => listOrder(sent, (e) => e.name.includes(term));
      expect(holding("kestrel")).toHaveLength(43);
      expect(holding("osprey")).toHaveLength(5);
      // With RARE_HITS, both terms are rare in every period: each arm read after the newer ran out answers its count
      // and its page in one statement. With 1, kestrel is common in the older period: its page is set aside and the
      // list walked there. Osprey's first page reads the two oldest periods together (one compound statement).
      for (const rareHits of [RARE_HITS, 1]) {
        searchTuning.rareHits = rareHits;
        try {
          for (const limit of [3, 50]) {
            expect(await listPages(p.key, "/v1/events/search", "q=kestrel", limit), `kestrel, pages of ${limit}, rare below ${rareHits}`).toEqual(holding("kestrel"));
            expect(await listPages(p.key, "/v1/events/search", "q=osprey", limit), `osprey, pages of ${limit}, rare below ${rareHits}`).toEqual(holding("osprey"));
          }
          expect(await listPages(p.key, "/v1/events/search", "q=heron", 3)).toEqual([]);
        } finally {
          searchTuning.rareHits = RARE_HITS;
        }
      }
    } finally {
      for (const n of [oldest, older, newer]) await dropPeriod(p.db, n);
    }
  });

  it("finds a term past the newest arms' first window, in them and in the periods below, page by page", async () => {
    const p = await createProject();
    const oldest = pastArm();
    const older = oldest + 100;
    for (const n of [oldest, older]) await makePeriod(p.db, n);
    try {
      const sent: Sent[] = [];
      const send = sender(p, sent);
      await send(oldest, 0, ["osprey one", "plain", "osprey two", "grebe one"]);
      await send(older, 3, ["plain", "osprey three", "plain"]);
      // The main tables' newest events, more than a search's first window (FIRST_WINDOW): osprey is in none of them,
      // grebe in the oldest of them, past the window, and in the oldest period.
      await send(null, null, ["grebe two", ...Array.from({ length: FIRST_WINDOW + 10 }, () => "plain member")]);
      for (const limit of [1, 2, 50]) {
        expect(await listPages(p.key, "/v1/events/search", "q=osprey", limit), `osprey, pages of ${limit}`).toEqual(listOrder(sent, (e) => e.name.includes("osprey")));
        expect(await listPages(p.key, "/v1/events/search", "q=grebe", limit), `grebe, pages of ${limit}`).toEqual(listOrder(sent, (e) => e.name.includes("grebe")));
      }
      expect(await listPages(p.key, "/v1/events/search", "q=heron", 3)).toEqual([]);
    } finally {
      for (const n of [oldest, older]) await dropPeriod(p.db, n);
    }
  });
});
