import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { newestRowPastHead, rowAfter, rowBefore } from "../../src/chain/chain-check";
import { COLUMNS, insertEventsStatements } from "../../src/chain/event-insert";
import { recoverHead } from "../../src/chain/head-recovery";
import { findIdempotent } from "../../src/chain/idempotency";
import { findLandedAppend } from "../../src/chain/landed-appends";
import { ledgerOf, ledgerView, packEvents } from "../../src/chain/ledger";
import { verifyProject } from "../../src/chain/verify";
import { idMillis } from "../../src/model/event-id";
import type { NewEvent } from "../../src/model/new-event";
import { armDb, dropPeriod, makePeriod, shardArms, type Arm } from "../../src/model/periods";
import { INDEXING_COLUMNS } from "../../src/model/row-indexing";
import type { NamedAppend } from "../../src/model/commit-spans";
import { loadKeyring } from "../../src/sealing/signing-keys";
import type { EventRow } from "../../src/db/schema";
import { call, createProject, freshIp, ingestMany, moveIntoPeriod, testArm } from "../helpers";

/**
 * Verify, and the chain's other reads of a project's hot rows by seq (its
 * neighbours, the head's recovery, idempotent replays, lost answers), over a
 * project whose rows are split between the main tables and a period
 * (model/periods.ts): each answers as it does with every row in the main
 * tables, and a row a database writer edits or deletes inside the period is
 * caught as it would be in the main tables.
 */

type Project = Awaited<ReturnType<typeof createProject>>;
type Sent = { id: string; seq: number; occurred_at: string; hash: string };

const INSIDE = "2000-01-03T00:00:00.000Z";
const OUTSIDE = "2000-01-01T00:00:00.000Z";
const FROM = "2000-01-02T00:00:00.000Z";

/** A project, with a period of its own made before its first read. */
async function splitProject(): Promise<{ p: Project; arm: number }> {
  const p = await createProject();
  const arm = testArm();
  await makePeriod(p.db, arm);
  return { p, arm };
}

/** Events with repeated actions, organizations and target types, some of three targets (event_targets), from two addresses. */
function events(c: number, backdated: boolean) {
  return Array.from({ length: 12 }, (_, i) => ({
    action: i % 3 === 0 ? "doc.read" : "doc.write",
    organization: `org_${i % 2}`,
    actor: { id: `u${i % 4}`, name: `Member ${c * 12 + i}` },
    targets: [{ type: i % 2 ? "doc" : "folder", id: `t${i}` }, ...(i % 4 === 0 ? [{ type: "team", id: "a" }, { type: "user", id: `x${i}` }] : [])],
    ...(backdated ? { occurred_at: i % 2 ? OUTSIDE : INSIDE } : {}),
  }));
}

/** Commits of 12: seqs 1-12 and 25-36 backdated, every other one before FROM; the rest live. */
async function ingested(p: Project, commits: number): Promise<Sent[]> {
  const sent: Sent[] = [];
  for (let c = 0; c < commits; c++) sent.push(...(await ingestMany(p.key, events(c, c % 2 === 0 && c < 3), { ip: c % 2 ? freshIp() : "10.9.9.9" })));
  return sent;
}

const verify = async (p: Project, query = "") => {
  const res = await call("GET", `/v1/events/verify${query}`, { key: p.key });
  expect(res.status, res.text).toBe(200);
  return res.json.data;
};

/** A period's rows of seqs `seqs` of the project, as stored (for a test to write back). */
async function storedRows(db: D1Database, projectId: string, seqs: number[]): Promise<EventRow[]> {
  const stored = COLUMNS.filter((c) => !(INDEXING_COLUMNS as readonly string[]).includes(c));
  const { results } = await db
    .prepare(`SELECT ${stored.join(", ")} FROM events WHERE project_id = ? AND seq IN (SELECT value FROM json_each(?)) ORDER BY seq`)
    .bind(projectId, JSON.stringify(seqs))
    .all<EventRow>();
  return results;
}

describe("verify over a project split between the main tables and a period", () => {
  it("answers as with every row in the main tables, whole, in a window, and in small pages", async () => {
    const { p, arm } = await splitProject();
    try {
      const sent = await ingested(p, 3);
      expect(sent.map((e) => e.seq)).toEqual(Array.from({ length: 36 }, (_, i) => i + 1));
      const windowed = `?from=${encodeURIComponent(FROM)}`;
      const between = `?from=${encodeURIComponent(FROM)}&to=${encodeURIComponent(sent[23].occurred_at)}`;
      const whole = await verify(p);
      expect(whole).toMatchObject({ ok: true, verified: 36, failure: null });
      const inWindow = await verify(p, windowed);
      // Every other row of the two backdated commits is before the window.
      expect(inWindow).toMatchObject({ ok: true, verified: 24, failure: null });
      const inBetween = await verify(p, between);
      expect(inBetween).toMatchObject({ ok: true, verified: 24, failure: null });

      // Seqs 13-36 go into the period (a commit of 12 at a time): the first backdated commit stays in the main
      // tables, its last row (seq 12) outside the window, so the period's first row links to it by a lookup.
      expect(await moveIntoPeriod(p.db, p.id, arm, 12, 12)).toBe(24);
      const left = await p.db.prepare("SELECT count(*) AS n FROM events WHERE project_id = ?").bind(p.id).first<{ n: number }>();
      expect(left!.n).toBe(12);
      expect(await verify(p)).toEqual(whole);
      expect(await verify(p, windowed)).toEqual(inWindow);
      expect(await verify(p, between)).toEqual(inBetween);

      // Pages of 5 (each arm's next 5, merged and cut), and of 7 (a page that takes rows of both arms).
      const ring = await loadKeyring(env.SIGNING_KEYS);
      for (const size of [5, 7]) {
        const open = await verifyProject(p.db, ring, p.id, { from: null, to: null }, await ledgerView(env, p.id), size);
        expect(open).toMatchObject({ ok: true, verified: 36, failure: null });
        const window = await verifyProject(p.db, ring, p.id, { from: FROM, to: null }, await ledgerView(env, p.id), size);
        expect(window).toMatchObject({ ok: true, verified: 24, failure: null });
      }
    } finally {
      await dropPeriod(p.db, arm);
    }
  });

  it("finds the search entry of a group closed inside the period (the index's own tables in the period's names)", async () => {
    const { p, arm } = await splitProject();
    try {
      await ingested(p, 4);
      expect(await verify(p)).toMatchObject({ ok: true, verified: 48, failure: null });
      // Seqs 17-32, a closed group (seq 48 is there), are all in the period, and so is their entry.
      await moveIntoPeriod(p.db, p.id, arm, 12, 12);
      expect(await verify(p)).toMatchObject({ ok: true, verified: 48, failure: null });
    } finally {
      await dropPeriod(p.db, arm);
    }
  });

  it("catches a row a database writer edits, deletes or plants inside the period", async () => {
    const { p, arm } = await splitProject();
    try {
      const sent = await ingested(p, 2);
      await moveIntoPeriod(p.db, p.id, arm, 12, 12);
      expect(await verify(p)).toMatchObject({ ok: true, verified: 24, failure: null });
      const period = armDb(p.db, arm);

      // An edited row in the period: its hash no longer covers it.
      await period.prepare("UPDATE events SET action = 'doc.delete' WHERE project_id = ? AND seq = 18").bind(p.id).run();
      expect(await verify(p)).toMatchObject({ ok: false, verified: 17, failure: { event_id: sent[17].id, reason: "hash_mismatch" } });
      await period.prepare("UPDATE events SET action = 'doc.write' WHERE project_id = ? AND seq = 18").bind(p.id).run();
      expect(await verify(p)).toMatchObject({ ok: true, verified: 24 });

      // A row planted past the head, in the period: no commit of the ledger wrote it.
      const [newest] = await storedRows(period, p.id, [24]);
      const plantedId = newest.id.slice(0, 20) + (newest.id[20] === "0" ? "1" : "0") + newest.id.slice(21);
      await p.db.batch(insertEventsStatements(period, [{ ...newest, seq: 25, id: plantedId, prev_hash: newest.hash }]));
      expect(await verify(p)).toMatchObject({ ok: false, failure: { event_id: plantedId, reason: "chain_broken" } });
      await period.prepare("DELETE FROM events WHERE project_id = ? AND seq = 25").bind(p.id).run();
      expect(await verify(p)).toMatchObject({ ok: true, verified: 24 });

      // The newest row deleted: the chain no longer ends at the ledger's head.
      await period.prepare("DELETE FROM events WHERE project_id = ? AND seq = 24").bind(p.id).run();
      expect(await verify(p)).toMatchObject({ ok: false, verified: 23, failure: { event_id: sent[22].id, reason: "chain_broken" } });
      // A row deleted in the middle of the period: the next row does not link to the one before it.
      await period.prepare("DELETE FROM events WHERE project_id = ? AND seq = 18").bind(p.id).run();
      expect(await verify(p)).toMatchObject({ ok: false, verified: 17, failure: { event_id: sent[18].id, reason: "chain_broken" } });
      // The main tables' last row deleted: the period's first row does not link to the one before it.
      await p.db.prepare("DELETE FROM events WHERE project_id = ? AND seq = 12").bind(p.id).run();
      expect(await verify(p)).toMatchObject({ ok: false, verified: 11, failure: { event_id: sent[12].id, reason: "chain_broken" } });
    } finally {
      await dropPeriod(p.db, arm);
    }
  });
});

describe("the chain's reads by seq over a project split between the main tables and a period", () => {
  it("finds a row's neighbours and the newest row past a head in whichever arm holds them", async () => {
    const { p, arm } = await splitProject();
    try {
      await ingested(p, 2);
      await moveIntoPeriod(p.db, p.id, arm, 12, 12);
      const arms: Arm[] = await shardArms(p.db);
      expect(arms).toContain(arm);
      for (const given of [undefined, arms]) {
        expect((await rowBefore(p.db, p.id, 13, given))?.seq).toBe(12);
        expect((await rowBefore(p.db, p.id, 14, given))?.seq).toBe(13);
        expect((await rowBefore(p.db, p.id, 100, given))?.seq).toBe(24);
        expect(await rowBefore(p.db, p.id, 1, given)).toBeNull();
        expect((await rowAfter(p.db, p.id, 11, 24, given))?.seq).toBe(12);
        expect((await rowAfter(p.db, p.id, 12, 24, given))?.seq).toBe(13);
        expect(await rowAfter(p.db, p.id, 24, 30, given)).toBeNull();
        expect((await newestRowPastHead(p.db, p.id, 3, given))?.seq).toBe(24);
        expect(await newestRowPastHead(p.db, p.id, 24, given)).toBeNull();
      }
      // Across a hole: seqs 12 and 13 gone, one from each arm.
      await p.db.prepare("DELETE FROM events WHERE project_id = ? AND seq = 12").bind(p.id).run();
      await armDb(p.db, arm).prepare("DELETE FROM events WHERE project_id = ? AND seq = 13").bind(p.id).run();
      expect((await rowBefore(p.db, p.id, 14))?.seq).toBe(11);
      expect((await rowAfter(p.db, p.id, 11, 24))?.seq).toBe(14);
    } finally {
      await dropPeriod(p.db, arm);
    }
  });

  it("recovers a head from rows past it in the period, and refuses more than one group commit across both arms", async () => {
    const { p, arm } = await splitProject();
    try {
      const sent = await ingested(p, 2);
      await moveIntoPeriod(p.db, p.id, arm, 12, 12);
      const ring = await loadKeyring(env.SIGNING_KEYS);
      const headAt = (seq: number) => ({ seq, hash: sent[seq - 1].hash });
      // The head's own row in the main tables, the commit past it in the period.
      const fromMain = await recoverHead(p.db, ring, p.id, headAt(12), 12);
      expect(fromMain).toMatchObject({ head: headAt(24), refused: null, inD1: true, lastReceivedMs: idMillis(sent[23].id) });
      expect(fromMain.adopted.map((r) => r.seq)).toEqual(Array.from({ length: 12 }, (_, i) => 13 + i));
      // Both in the period.
      const inPeriod = await recoverHead(p.db, ring, p.id, headAt(18), 6);
      expect(inPeriod).toMatchObject({ head: headAt(24), refused: null, inD1: true });
      expect(inPeriod.adopted.map((r) => r.seq)).toEqual([19, 20, 21, 22, 23, 24]);
      // The head at the last row: nothing past it, its own row found in the period.
      expect(await recoverHead(p.db, ring, p.id, headAt(24), 12)).toMatchObject({ head: headAt(24), adopted: [], inD1: true, lastReceivedMs: idMillis(sent[23].id) });
      // Rows past the head in both arms, more than one group commit: refused, the head kept.
      const refused = await recoverHead(p.db, ring, p.id, headAt(6), 12);
      expect(refused).toMatchObject({ head: headAt(6), adopted: [], inD1: true });
      expect(refused.refused).toMatch(/more than one group commit/);
      // Within one group commit's reach, they are adopted across the arms, in seq order.
      const across = await recoverHead(p.db, ring, p.id, headAt(6), 18);
      expect(across.adopted.map((r) => r.seq)).toEqual(Array.from({ length: 18 }, (_, i) => 7 + i));
    } finally {
      await dropPeriod(p.db, arm);
    }
  });

  it("replays an Idempotency-Key whose events are in the period, or in both arms", async () => {
    const { p, arm } = await splitProject();
    try {
      const body = (n: number) => ({ events: Array.from({ length: n }, (_, i) => ({ action: "invoice.imported", metadata: { i } })) });
      const first = await call("POST", "/v1/events/batch", { key: p.key, body: body(4), headers: { "Idempotency-Key": "in-main" } });
      const second = await call("POST", "/v1/events/batch", { key: p.key, body: body(5), headers: { "Idempotency-Key": "in-period" } });
      expect([first.status, second.status]).toEqual([201, 201]);
      // The second batch's events go into the period; the first's stay.
      await moveIntoPeriod(p.db, p.id, arm, 4, 5);
      const seqs = async (key: string) => (await findIdempotent(env, p.db, p.id, key))!.rows.map((r) => r.seq);
      expect(await seqs("in-main")).toEqual([1, 2, 3, 4]);
      expect(await seqs("in-period")).toEqual([5, 6, 7, 8, 9]);
      expect(await findIdempotent(env, p.db, p.id, "never")).toBeNull();
      const retry = await call("POST", "/v1/events/batch", { key: p.key, body: body(5), headers: { "Idempotency-Key": "in-period" } });
      expect(retry.status).toBe(201);
      expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
      expect(retry.json.data).toEqual(second.json.data);
    } finally {
      await dropPeriod(p.db, arm);
    }
  });

  it("finds a lost answer's commit by its name, on its span or its lone row, in the period", async () => {
    const { p, arm } = await splitProject();
    try {
      const event = (action: string): NewEvent => ({
        action, organization: null, actor_id: null, actor_type: null, actor_name: null, actor_email: null,
        targets: "[]", metadata: "{}", occurred_at: null, ip_address: null, user_agent: null,
      });
      const sentAt = Date.now() - 1000;
      const append = (actions: string[], token: string) =>
        ledgerOf(env, p.id).append({
          events: packEvents(actions.map(event)), idempotencyKey: null, requestHash: null, keyPrefix: p.prefix, rateLimit: 1200, catalogRevision: 0,
          sentAt: Date.now(), token,
        });
      for (const [actions, token] of [[["kept"], "kept-token"], [["spanned", "spanned", "spanned"], "spanned-token"], [["lone"], "lone-token"]] as const) {
        expect((await append([...actions], token)).status).toBe("appended");
      }
      // Seqs 2-5 go into the period, written by the commits' own statements with the names their commits carried.
      const rows = await storedRows(p.db, p.id, [2, 3, 4, 5]);
      await p.db.prepare("DELETE FROM events WHERE project_id = ? AND seq > 1").bind(p.id).run();
      const period = armDb(p.db, arm);
      const named: Array<[EventRow[], NamedAppend]> = [
        [rows.slice(0, 3), { token: "spanned-token", first: 2, last: 4 }],
        [rows.slice(3), { token: "lone-token", first: 5, last: 5 }],
      ];
      for (const [commit, name] of named) await p.db.batch(insertEventsStatements(period, commit, [name]));

      const found = async (token: string) => {
        const landed = await findLandedAppend(p.db, p.id, token, sentAt);
        return landed === null ? null : landed.map((r) => [r.seq, r.action]);
      };
      expect(await found("kept-token")).toEqual([[1, "kept"]]);
      expect(await found("spanned-token")).toEqual([[2, "spanned"], [3, "spanned"], [4, "spanned"]]);
      expect(await found("lone-token")).toEqual([[5, "lone"]]);
      expect(await found("never-token")).toBeNull();
      // Not found, it is given up, once, in the shard (not the period's business).
      const givenUp = await p.db.prepare("SELECT count(*) AS n FROM given_up_appends WHERE token = ?").bind("never-token").first<{ n: number }>();
      expect(givenUp!.n).toBe(1);
      expect(await verify(p)).toMatchObject({ ok: true, verified: 5 });
    } finally {
      await dropPeriod(p.db, arm);
    }
  });
});
