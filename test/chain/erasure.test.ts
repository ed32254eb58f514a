import { describe, expect, it } from "vitest";
import { scrubHotBatch } from "../../src/chain/erasure";
import type { ErasureRecords } from "../../src/chain/erasure-records";
import { createProject, dbOf, handRowId, interceptPrepare } from "../helpers";
import type { ErasureRequest } from "../../src/chain/erasure-running";

/** The project's D1, except that each scrub statement reports how many rows it rewrote (it runs in a batch with its reindex). */
function countingDb(db: D1Database, perStatement: number[]): D1Database {
  const scrubs = new WeakSet<D1PreparedStatement>();
  const counting = interceptPrepare(db, (sql, statement) => {
    if (!sql.trimStart().startsWith("UPDATE")) return statement;
    return {
      bind: (...values: unknown[]) => {
        const bound = statement.bind(...values);
        scrubs.add(bound);
        return bound;
      },
    } as unknown as D1PreparedStatement;
  });
  return new Proxy(counting, {
    get(target, prop) {
      if (prop !== "batch") return Reflect.get(target, prop);
      return async (statements: D1PreparedStatement[]) => {
        const results = await db.batch(statements);
        statements.forEach((s, i) => scrubs.has(s) && perStatement.push(results[i].results.length));
        return results;
      };
    },
  });
}

/** Records the seqs each step claims, as the ledger's erasure record would. */
function claims(claimed: number[][]): ErasureRecords {
  return { cover: (_id: number, seqs: number[]) => claimed.push(seqs) } as unknown as ErasureRecords;
}

const NOW = "2026-05-05T05:05:05.000Z";

/** An erasure job's hot phase: batches (each one step's lock) until none is left. */
async function eraseRows(db: D1Database, records: ErasureRecords, req: ErasureRequest, erasedAt: string, id: number, batch: number, throughSeq = Number.MAX_SAFE_INTEGER) {
  let total = 0;
  for (let n; (n = await scrubHotBatch(db, records, req, erasedAt, id, throughSeq, batch)) > 0; ) total += n;
  return total;
}

/** Rows written by hand on the seq index: their projects are made with no key (model/row-keys.ts). */
async function seed(projectId: string, actorId: string, count: number, organization: string | null = null) {
  const now = new Date().toISOString();
  const head = await (await dbOf(projectId)).prepare("SELECT COALESCE(MAX(seq), 0) AS seq FROM events WHERE project_id = ?").bind(projectId).first<{ seq: number }>();
  const rows = Array.from({ length: count }, (_, i) => [
    crypto.randomUUID(), projectId, head!.seq + i + 1, "seeded", organization, actorId, "Name", "e@x.test", "[]", "{}", now, now, "10.0.0.1", "ua", "salt", "commitment", "hash",
  ]);
  await (await dbOf(projectId)).prepare(
    `INSERT INTO events (row_id, id, project_id, seq, action, organization, actor_id, actor_name, actor_email, targets, metadata,
       occurred_at, received_at, ip_address, user_agent, pii_salt, pii_commitment, hash)
     SELECT ${handRowId("?2", "value->>2", "key")}, value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6, value->>7, value->>8, value->>9,
       value->>10, value->>11, value->>12, value->>13, value->>14, value->>15, value->>16 FROM json_each(?1)`,
  )
    .bind(JSON.stringify(rows), projectId)
    .run();
}

describe("eraseRows", () => {
  it("rewrites at most one batch of rows per statement, and stops once nothing is left", async () => {
    const p = await createProject(undefined, { keyed: false });
    await seed(p.id, "big", 23);
    const perStatement: number[] = [];
    const claimed: number[][] = [];
    const total = await eraseRows(countingDb(p.db, perStatement), claims(claimed), { projectId: p.id, by: "id", value: "big", organization: null }, NOW, 1, 5);
    expect(total).toBe(23);
    expect(perStatement).toEqual([5, 5, 5, 5, 3]);
    // Every scrubbed row was claimed for the erasure record before it was scrubbed.
    expect(claimed.flat()).toEqual(Array.from({ length: 23 }, (_, i) => i + 1));
  });

  it("stops without an empty scrub when the count is a multiple of the batch", async () => {
    const p = await createProject(undefined, { keyed: false });
    await seed(p.id, "even", 10);
    const perStatement: number[] = [];
    expect(await eraseRows(countingDb(p.db, perStatement), claims([]), { projectId: p.id, by: "id", value: "even", organization: null }, NOW, 1, 5)).toBe(10);
    expect(perStatement).toEqual([5, 5]);
  });

  it("scopes each batch to the project, the actor and the organization", async () => {
    const p = await createProject(undefined, { shard: 0, keyed: false });
    const q = await createProject(undefined, { shard: 0, keyed: false });
    await seed(p.id, "ann", 4, "org_a");
    await seed(p.id, "ann", 3, "org_b");
    await seed(q.id, "ann", 2, "org_a");
    const perStatement: number[] = [];
    expect(await eraseRows(countingDb(p.db, perStatement), claims([]), { projectId: p.id, by: "id", value: "ann", organization: "org_a" }, NOW, 1, 2)).toBe(4);
    const left = await p.db.prepare("SELECT project_id, organization, COUNT(*) AS n FROM events WHERE actor_id = 'ann' AND project_id IN (?, ?) GROUP BY 1, 2 ORDER BY project_id = ? DESC")
      .bind(p.id, q.id, p.id)
      .all();
    expect(left.results).toEqual([
      { project_id: p.id, organization: "org_b", n: 3 },
      { project_id: q.id, organization: "org_a", n: 2 },
    ]);
  });

  it("leaves events appended after the erasure was accepted (seq past its through_seq) alone", async () => {
    const p = await createProject(undefined, { keyed: false });
    await seed(p.id, "late", 6);
    expect(await eraseRows(p.db, claims([]), { projectId: p.id, by: "id", value: "late", organization: null }, NOW, 1, 4, 4)).toBe(4);
    const left = await p.db.prepare("SELECT seq FROM events WHERE project_id = ? AND actor_id = 'late' ORDER BY seq").bind(p.id).all<{ seq: number }>();
    expect(left.results.map((r) => r.seq)).toEqual([5, 6]);
  });
});
