import { describe, expect, it } from "vitest";
import { armDb, armName, dropPeriod, makePeriod } from "../../src/model/periods";
import { call, createProject, createScopedKey, ingest, ingestMany, listOrder, listPages, moveIntoPeriod, testArm } from "../helpers";
import { eraseApplied } from "./erasure-helpers";
import { ago, count, gapRows, plan, purgeSteps, verify } from "../storage/retention-helpers";

/**
 * Erasure and retention over a project whose hot rows are split between the
 * main tables and a period (model/periods.ts): every arm's rows are found,
 * scrubbed or purged, as if they were all in one.
 */

const marker = () => `zq${crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`;

interface Sent {
  seq: number;
  occurred_at: string;
  id: string;
  ada: boolean;
  action: string;
}

/** The project's seqs in one arm (`db` through armDb) matching `where`. */
async function seqsIn(db: D1Database, projectId: string, where: string, ...params: unknown[]): Promise<number[]> {
  const { results } = await db.prepare(`SELECT seq FROM events WHERE project_id = ? AND ${where} ORDER BY seq`).bind(projectId, ...params).all<{ seq: number }>();
  return results.map((r) => r.seq);
}

/** Pages of arm `arm`'s search index (its FTS5 tables) holding `text`: an erased word's leave once compacted. */
async function pagesHolding(db: D1Database, arm: number | null, text: string): Promise<number> {
  const table = armName("events_search", arm);
  const row = await db
    .prepare(
      `SELECT (SELECT count(*) FROM ${table}_data WHERE instr(block, CAST(?1 AS BLOB)) > 0) + ` +
        `(SELECT count(*) FROM ${table}_idx WHERE instr(term, CAST(?1 AS BLOB)) > 0) AS n`,
    )
    .bind(text)
    .first<{ n: number }>();
  return row!.n;
}

/** 48 events in 8 commits, two of every three Ada's, the others Bob's; Ada's in org_a up to seq 24, then in org_b. */
async function ingestPair(key: string, name: string) {
  const ada = { id: "u_ada", type: "user", name: `Ada ${name}`, email: "ada@example.com" };
  const bob = { id: "u_bob", type: "user", name: "Bob Byron", email: "bob@example.com" };
  const sent: Sent[] = [];
  for (let c = 0; c < 8; c++) {
    const input = Array.from({ length: 6 }, (_, i) => {
      const n = c * 6 + i;
      const isAda = n % 3 !== 0;
      return { action: n % 2 ? "doc.write" : "doc.read", organization: isAda && n >= 24 ? "org_b" : "org_a", actor: isAda ? ada : bob, metadata: { n } };
    });
    const stored = await ingestMany(key, input, { ip: "203.0.113.77" });
    stored.forEach((e, i) => sent.push({ seq: e.seq, occurred_at: e.occurred_at, id: e.id, ada: input[i].actor === ada, action: input[i].action }));
  }
  return sent;
}

describe("periods: erasure and retention in every arm", () => {
  it("erases an actor whose events are in the main tables and a period: every one scrubbed, none listed or found, its words compacted away, verify ok", async () => {
    const p = await createProject();
    // Made before the project's first read: the isolate keeps a project's arms for a while.
    const arm = testArm();
    await makePeriod(p.db, arm);
    try {
      const name = marker();
      const sent = await ingestPair(p.key, name);
      expect(await moveIntoPeriod(p.db, p.id, arm, 18, 6)).toBe(30);
      const period = armDb(p.db, arm);
      const ada = sent.filter((e) => e.ada).map((e) => e.seq);
      expect(ada.some((s) => s <= 18) && ada.some((s) => s > 18)).toBe(true);
      expect(await listPages(p.key, "/v1/events", "actor_id=u_ada", 7)).toEqual(listOrder(sent, (e) => e.ada));
      expect(await listPages(p.key, "/v1/events/search", `q=${name}`, 7)).toEqual(listOrder(sent, (e) => e.ada));
      // The period's closed groups have their entries: the name is in its index's pages before.
      expect(await pagesHolding(p.db, arm, name)).toBeGreaterThan(0);
      expect(await verify(p.key)).toMatchObject({ ok: true });

      const erased = await eraseApplied(p.key, "/v1/actors/u_ada");
      expect(erased.status).toBe(202);
      expect(erased.anonymized).toBe(ada.length);

      // Each arm's rows of Ada, and only those, are scrubbed where they are.
      expect(await seqsIn(p.db, p.id, "anonymized_at IS NOT NULL")).toEqual(ada.filter((s) => s <= 18));
      expect(await seqsIn(period, p.id, "anonymized_at IS NOT NULL")).toEqual(ada.filter((s) => s > 18));
      for (const db of [p.db, period]) {
        const left = "(actor_id = 'u_ada' OR actor_name LIKE 'Ada %' OR actor_email = 'ada@example.com' OR (anonymized_at IS NOT NULL AND (ip_address IS NOT NULL OR pii_salt IS NOT NULL)))";
        expect(await seqsIn(db, p.id, left)).toEqual([]);
      }
      expect(await listPages(p.key, "/v1/events", "actor_id=u_ada", 7)).toEqual([]);
      expect(await listPages(p.key, "/v1/events/search", `q=${name}`, 7)).toEqual([]);
      // The groups' entries were made again in their own arm: Bob's events and the scrubbed ones' actions are still found.
      expect(await listPages(p.key, "/v1/events/search", "q=bob", 7)).toEqual(listOrder(sent, (e) => !e.ada));
      expect(await listPages(p.key, "/v1/events/search", "q=write", 7)).toEqual(listOrder(sent, (e) => e.action === "doc.write"));
      // Compacted in every arm: the erased name left each index's pages.
      expect(await pagesHolding(p.db, null, name)).toBe(0);
      expect(await pagesHolding(p.db, arm, name)).toBe(0);
      await period.prepare("INSERT INTO events_search (events_search, rank) VALUES ('integrity-check', 0)").run();
      expect(await verify(p.key)).toMatchObject({ ok: true, anonymized: ada.length });
    } finally {
      await dropPeriod(p.db, arm);
    }
  });

  it("refuses an erasure that a legal hold forbids when the held events are only in a period, and changes nothing", async () => {
    const p = await createProject();
    const arm = testArm();
    await makePeriod(p.db, arm);
    try {
      const sent = await ingestPair(p.key, marker());
      // Ada's org_b events (seqs above 24) are all in the period.
      expect(await moveIntoPeriod(p.db, p.id, arm, 24, 6)).toBe(24);
      const hold = await call("POST", "/v1/legal-holds", { key: p.key, body: { organization: "org_b", reason: "case in a period" } });
      expect(hold.status).toBe(201);
      const res = await call("DELETE", "/v1/actors/u_ada", { key: p.key });
      expect(res.status).toBe(409);
      expect(res.json.error).toMatchObject({ code: "LEGAL_HOLD", details: { holds: [hold.json.data.id] } });
      for (const db of [p.db, armDb(p.db, arm)]) expect(await seqsIn(db, p.id, "anonymized_at IS NOT NULL")).toEqual([]);
      expect(await listPages(p.key, "/v1/events", "actor_id=u_ada", 50)).toEqual(listOrder(sent, (e) => e.ada));

      // Scoped to the organization no hold covers (its events in the main tables), it goes.
      const scoped = await eraseApplied(p.key, "/v1/actors/u_ada?organization=org_a");
      expect(scoped.anonymized).toBe(sent.filter((e) => e.ada && e.seq <= 24).length);
      expect(await seqsIn(armDb(p.db, arm), p.id, "anonymized_at IS NOT NULL")).toEqual([]);
    } finally {
      await dropPeriod(p.db, arm);
    }
  });

  it("tells an id that names only self-audit records in a period from one that names a person too, whichever arm holds them", async () => {
    const p = await createProject();
    const arm = testArm();
    await makePeriod(p.db, arm);
    try {
      const admin = await createScopedKey(p.id, ["admin"]);
      await ingest(p.key, { action: "doc.read", actor: { id: "u_ada" } });
      // An admin act: witness.key.created, with the admin key's prefix as its actor (seq 2), moved into the period.
      expect((await call("POST", "/v1/keys", { key: admin.key, body: { scopes: ["read"] } })).status).toBe(201);
      expect(await moveIntoPeriod(p.db, p.id, arm, 1)).toBe(1);
      const period = armDb(p.db, arm);
      expect(await seqsIn(period, p.id, "actor_id = ? AND action = 'witness.key.created'", admin.prefix)).toEqual([2]);

      const refused = await call("DELETE", `/v1/actors/${admin.prefix}`, { key: p.key });
      expect(refused.status).toBe(400);
      expect(refused.json.error.message).toMatch(/self-audit records name API keys and sessions/);

      // A person's event under the same id, in the main tables: the erasure goes, and scrubs it alone.
      const [person] = await ingestMany(p.key, [{ action: "doc.read", actor: { id: admin.prefix, name: "Same Id" } }]);
      const erased = await eraseApplied(p.key, `/v1/actors/${admin.prefix}`);
      expect(erased.anonymized).toBe(1);
      expect(await seqsIn(p.db, p.id, "anonymized_at IS NOT NULL")).toEqual([person.seq]);
      expect(await seqsIn(period, p.id, "actor_id = ? AND anonymized_at IS NULL", admin.prefix)).toEqual([2]);
    } finally {
      await dropPeriod(p.db, arm);
    }
  });

  it("purges expired hot rows from the main tables and a period, with one gap record per hole across them, and verify ok", async () => {
    const p = await createProject();
    const arm = testArm();
    await makePeriod(p.db, arm);
    try {
      // 1-5 expire, 6 stays, 7-12 expire, 13-16 stay (new); rows after seq 9 go into the period: the hole 7-12 spans both.
      const old = ago(10);
      const events = Array.from({ length: 16 }, (_, i) => ({
        action: i === 5 ? "doc.keep" : "debug.trace",
        actor: { id: `u_${i % 3}` },
        occurred_at: i < 12 ? old : ago(0),
        // A third target: the first two are the row's own columns, the rest rows of event_targets.
        targets: ["doc", "folder", "page"].map((type) => ({ type, id: `${type}_${i}` })),
        metadata: { i },
      }));
      await ingestMany(p.key, events.slice(0, 8));
      await ingestMany(p.key, events.slice(8));
      await plan(p.key, [{ pattern: "debug.*", days: 5 }]);
      // The plan's self-audit record is seq 17.
      expect(await moveIntoPeriod(p.db, p.id, arm, 9, 4)).toBe(8);
      const period = armDb(p.db, arm);
      expect(await seqsIn(period, p.id, "1")).toEqual([10, 11, 12, 13, 14, 15, 16, 17]);
      const targetsOfExpired = (db: D1Database) => count(db, "event_targets WHERE project_id = ? AND seq <= 12 AND seq <> 6", p.id);
      expect(await targetsOfExpired(period)).toBeGreaterThan(0);

      expect(await purgeSteps(p.id)).toEqual({ purged: 11, refused: 0 });
      expect(await seqsIn(p.db, p.id, "1")).toEqual([6]);
      expect(await seqsIn(period, p.id, "1")).toEqual([13, 14, 15, 16, 17]);
      // The period's own rows of the deleted events (targets, spans, sets) went with them: its triggers ran.
      expect(await targetsOfExpired(period)).toBe(0);
      expect(await targetsOfExpired(p.db)).toBe(0);
      expect(await gapRows(p.db, p.id)).toEqual([
        { first_seq: 1, last_seq: 5, purged_count: 5 },
        { first_seq: 7, last_seq: 12, purged_count: 6 },
      ]);
      const result = await verify(p.key);
      expect(result).toMatchObject({ ok: true, gaps: [{ first_seq: 1, last_seq: 5 }, { first_seq: 7, last_seq: 12 }] });
      expect(await listPages(p.key, "/v1/events", "", 50)).toEqual([17, 16, 15, 14, 13, 6]);
    } finally {
      await dropPeriod(p.db, arm);
    }
  });
});
