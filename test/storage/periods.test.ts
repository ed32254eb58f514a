import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import { armDb, dropPeriod, makePeriod, PERIOD_TABLES, type Arm } from "../../src/model/periods";
import { readSegment } from "../../src/storage/archive-segments";
import { readListed } from "../../src/storage/archive-walk";
import { deleteBatch, rowCounts } from "../../src/storage/shard-copy";
import { call, createProject, createScopedKey, ingestMany, listOrder, listPages, moveIntoPeriod, testArm } from "../helpers";
import { archiveAll, segmentsOf } from "./archive-helpers";

/**
 * A shard's moves and its archive's way back, over a project whose hot rows
 * are split between the main tables and a period (model/periods.ts): each
 * made before the project's first read, as a period is made well before any
 * row is written to it, and dropped before the test ends.
 */

/** Event `i` of a test: its actor's name is its seq when sent first to a new project (i + 1), found by search. */
const input = (i: number) => ({
  action: i % 3 === 0 ? "doc.read" : "doc.write",
  actor: { id: `u${i % 4}`, name: `Member ${i + 1}` },
  targets: [{ type: i % 2 ? "doc" : "folder", id: `t${i}` }],
  metadata: { i },
});

type Sent = { seq: number; occurred_at: string; id: string };

async function send(key: string, from: number, count: number): Promise<Sent[]> {
  const stored = await ingestMany(key, Array.from({ length: count }, (_, i) => input(from + i)));
  return stored.map((e: Sent) => ({ seq: e.seq, occurred_at: e.occurred_at, id: e.id }));
}

/** What period `arm` holds: its events of the project, and every row of each of its tables (a test's period holds one project's rows). */
async function periodHolds(db: D1Database, projectId: string, arm: number) {
  const period = armDb(db, arm);
  const events = await period.prepare("SELECT count(*) AS n FROM events WHERE project_id = ?").bind(projectId).first<{ n: number }>();
  const tables = await Promise.all(PERIOD_TABLES.map(async (t) => [t, (await period.prepare(`SELECT count(*) AS n FROM ${t}`).first<{ n: number }>())!.n] as const));
  return { events: events!.n, rows: Object.fromEntries(tables) };
}

const nothing = Object.fromEntries(PERIOD_TABLES.map((t) => [t, 0]));

async function countOn(db: D1Database, projectId: string) {
  return (await db
    .prepare("SELECT count(*) AS events, count(DISTINCT seq) AS seqs FROM events WHERE project_id = ?")
    .bind(projectId)
    .first<{ events: number; seqs: number }>())!;
}

/** Steps the move (the ledger's, as an operator's request runs it) until done. */
async function runMove(projectId: string, shard: number): Promise<string[]> {
  await env.DB.prepare("UPDATE projects SET move_to = ? WHERE id = ?").bind(shard, projectId).run();
  const ledger = ledgerOf(env, projectId);
  const seen: string[] = [];
  for (let i = 0; i < 200; i++) {
    const progress = await ledger.moveShard(shard, { drainSeconds: 0 });
    seen.push(progress.status);
    if (progress.status === "done") return seen;
    if (!["clearing", "copying", "draining", "deleting"].includes(progress.status)) throw new Error(`move: ${JSON.stringify(progress)}`);
  }
  throw new Error("move did not finish");
}

async function expectVerified(key: string, count: number) {
  const verify = (await call("GET", "/v1/events/verify", { key })).json.data;
  expect(verify).toMatchObject({ ok: true, verified: count });
}

async function expectFound(key: string, sent: Sent[], seqs: number[]) {
  for (const seq of seqs) {
    const got = await call("GET", `/v1/events/${sent[seq - 1].id}`, { key });
    expect(got.status, got.text).toBe(200);
    expect(got.json.data.seq).toBe(seq);
  }
}

/** Restores the project's whole archive through the operator's route. */
async function restoreAll(projectId: string): Promise<number> {
  const { key: admin } = await createScopedKey(projectId, ["admin"]);
  const done = await call("POST", "/v1/project/restore-archive", { key: admin });
  expect(done.json.data, done.text).toMatchObject({ status: "done", remaining: 0 });
  return done.json.data.restored;
}

describe("a project split between the main tables and a period: moves and the archive's way back", () => {
  it("moves it to another shard: copied in seq order from both arms into the target's main tables, listed, searched and verified there, and left in neither arm of the source", async () => {
    const p = await createProject(undefined, { shard: 0 });
    const arm: Arm = testArm();
    await makePeriod(p.db, arm);
    try {
      const sent = await send(p.key, 0, 700);
      // A copy batch (MOVE_BATCH, 500) takes 300 rows of the main tables and 200 of the period's 400.
      expect(await moveIntoPeriod(p.db, p.id, arm, 300)).toBe(400);
      expect(await rowCounts(p.db, p.id)).toMatchObject({ events: 700 });
      const all = listOrder(sent, () => true);
      expect(await listPages(p.key, "/v1/events", "", 200)).toEqual(all);

      const seen = await runMove(p.id, 1);
      expect(seen).toContain("deleting");
      expect((await env.DB.prepare("SELECT shard FROM projects WHERE id = ?").bind(p.id).first())!.shard).toBe(1);
      expect(await countOn(env.EVENTS_1, p.id)).toEqual({ events: 700, seqs: 700 });
      expect(await countOn(env.EVENTS_0, p.id)).toEqual({ events: 0, seqs: 0 });
      // The period is left with nothing: no event, and none of their search entries, spans, runs or sets.
      expect(await periodHolds(p.db, p.id, arm)).toEqual({ events: 0, rows: nothing });

      expect(await listPages(p.key, "/v1/events", "", 200)).toEqual(all);
      expect(await listPages(p.key, "/v1/events", "action=doc.read", 50)).toEqual(listOrder(sent, (e) => (e.seq - 1) % 3 === 0));
      expect(await listPages(p.key, "/v1/events/search", "q=member", 200)).toEqual(all);
      for (const seq of [123, 650]) expect(await listPages(p.key, "/v1/events/search", `q=member%20${seq}`, 5)).toEqual([seq]);
      await expectFound(p.key, sent, [1, 300, 301, 700]);
      await expectVerified(p.key, 700);
    } finally {
      await dropPeriod(p.db, arm);
    }
  });

  it("deletes its rows from every arm in batches no longer than the limit, and counts them in every arm", async () => {
    const p = await createProject();
    const arm: Arm = testArm();
    await makePeriod(p.db, arm);
    try {
      await send(p.key, 0, 60);
      expect(await moveIntoPeriod(p.db, p.id, arm, 20)).toBe(40);
      expect(await rowCounts(p.db, p.id)).toMatchObject({ events: 60 });
      // Each batch takes at most 10 events, from both arms (the rows it reports count what triggers delete with them too).
      const left = [60];
      for (let i = 0; i < 20 && left[0] > 0; i++) {
        const batch = await deleteBatch(p.db, p.id, 10);
        expect(batch.rows).toBeGreaterThan(0);
        expect(batch.freedBytes).toBeGreaterThan(0);
        left.unshift((await rowCounts(p.db, p.id)).events);
        expect(left[1] - left[0]).toBeGreaterThan(0);
        expect(left[1] - left[0]).toBeLessThanOrEqual(10);
      }
      expect(left.reverse()).toEqual([60, 50, 40, 30, 20, 15, 10, 5, 0]);
      expect((await deleteBatch(p.db, p.id, 10)).rows).toBe(0);
      expect(await rowCounts(p.db, p.id)).toMatchObject({ events: 0 });
      expect(await countOn(p.db, p.id)).toEqual({ events: 0, seqs: 0 });
      expect(await periodHolds(p.db, p.id, arm)).toEqual({ events: 0, rows: nothing });
    } finally {
      await dropPeriod(p.db, arm);
    }
  });

  it("restores its archive into the main tables while its newer rows stay in the period: every event listed, searched, got and verified", async () => {
    const p = await createProject();
    const arm: Arm = testArm();
    await makePeriod(p.db, arm);
    try {
      const sent = await send(p.key, 0, 30);
      await archiveAll(p.id, 6);
      expect(await segmentsOf(p.db, p.id)).toHaveLength(5);
      sent.push(...(await send(p.key, 30, 24)));
      expect(sent.map((e) => e.seq)).toEqual(Array.from({ length: 54 }, (_, i) => i + 1));
      expect(await moveIntoPeriod(p.db, p.id, arm, 42)).toBe(12);
      const period = await periodHolds(p.db, p.id, arm);
      expect(period.events).toBe(12);

      expect(await restoreAll(p.id)).toBe(30);
      // Back in the main tables, beside the rows that never left them and the restore's own record; the period as it was.
      expect(await countOn(p.db, p.id)).toEqual({ events: 43, seqs: 43 });
      expect(await periodHolds(p.db, p.id, arm)).toEqual(period);
      const record = (await call("GET", "/v1/events?action=witness.archive.restored", { key: p.key })).json.data;
      expect(record).toHaveLength(1);
      const all = listOrder([...sent, record[0]], () => true);
      expect(await listPages(p.key, "/v1/events", "", 200)).toEqual(all);
      expect(await listPages(p.key, "/v1/events", "", 7)).toEqual(all);
      expect(await listPages(p.key, "/v1/events/search", "q=member", 10)).toEqual(listOrder(sent, () => true));
      for (const seq of [14, 29, 50]) expect(await listPages(p.key, "/v1/events/search", `q=member%20${seq}`, 5)).toEqual([seq]);
      await expectFound(p.key, sent, [1, 30, 31, 54]);
      await expectVerified(p.key, 55);
    } finally {
      await dropPeriod(p.db, arm);
    }
  });

  it("reads a segment a walk listed and that was brought back hot meanwhile from the arms its rows are in now", async () => {
    const p = await createProject();
    const arm: Arm = testArm();
    await makePeriod(p.db, arm);
    try {
      await send(p.key, 0, 30);
      await archiveAll(p.id, 6);
      const listed = (await segmentsOf(p.db, p.id))[4];
      expect([listed.first_seq, listed.last_seq]).toEqual([25, 30]);
      const archived = await readSegment(env, listed);
      expect(await restoreAll(p.id)).toBe(30);
      // Its rows are now hot, the last three of them (with the restore's record) in the period.
      expect(await moveIntoPeriod(p.db, p.id, arm, 27)).toBe(4);
      const rows = await readListed(env, p.db, listed);
      const fields = (r: { seq: number; id: string; hash: string }) => [r.seq, r.id, r.hash];
      expect(rows.map(fields)).toEqual(archived.map(fields));
    } finally {
      await dropPeriod(p.db, arm);
    }
  });
});
