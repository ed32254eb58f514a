import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { eraseActorRows } from "../../src/chain/erasure";
import { createProject } from "../helpers";

/** A D1 whose statements report how many rows each execution rewrote. */
function countingDb(perStatement: number[]): D1Database {
  return {
    prepare(sql: string) {
      const statement = env.DB.prepare(sql);
      return {
        bind: (...values: unknown[]) => {
          const bound = statement.bind(...values);
          return {
            all: async () => {
              const result = await bound.all();
              perStatement.push(result.results.length);
              return result;
            },
          };
        },
      };
    },
  } as unknown as D1Database;
}

async function seed(projectId: string, actorId: string, count: number, organization: string | null = null) {
  const now = new Date().toISOString();
  const head = await env.DB.prepare("SELECT COALESCE(MAX(seq), 0) AS seq FROM events WHERE project_id = ?").bind(projectId).first<{ seq: number }>();
  const rows = Array.from({ length: count }, (_, i) => [
    crypto.randomUUID(), projectId, head!.seq + i + 1, "seeded", organization, actorId, "Name", "e@x.test", "[]", "{}", now, now, "10.0.0.1", "ua", "salt", "commitment", "hash",
  ]);
  await env.DB.prepare(
    `INSERT INTO events (id, project_id, seq, action, organization, actor_id, actor_name, actor_email, targets, metadata,
       occurred_at, received_at, ip_address, user_agent, pii_salt, pii_commitment, hash)
     SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6, value->>7, value->>8, value->>9,
       value->>10, value->>11, value->>12, value->>13, value->>14, value->>15, value->>16 FROM json_each(?)`,
  )
    .bind(JSON.stringify(rows))
    .run();
}

describe("eraseActorRows", () => {
  it("rewrites at most one batch of rows per statement, and stops once nothing is left", async () => {
    const p = await createProject();
    await seed(p.id, "big", 23);
    const perStatement: number[] = [];
    const total = await eraseActorRows(countingDb(perStatement), { projectId: p.id, actorId: "big", organization: null }, undefined, 5);
    expect(total).toBe(23);
    expect(perStatement).toEqual([5, 5, 5, 5, 3]);
  });

  it("ends with one empty statement when the count is a multiple of the batch", async () => {
    const p = await createProject();
    await seed(p.id, "even", 10);
    const perStatement: number[] = [];
    expect(await eraseActorRows(countingDb(perStatement), { projectId: p.id, actorId: "even", organization: null }, undefined, 5)).toBe(10);
    expect(perStatement).toEqual([5, 5, 0]);
  });

  it("scopes each batch to the project, the actor and the organization", async () => {
    const p = await createProject();
    const q = await createProject();
    await seed(p.id, "ann", 4, "org_a");
    await seed(p.id, "ann", 3, "org_b");
    await seed(q.id, "ann", 2, "org_a");
    const perStatement: number[] = [];
    expect(await eraseActorRows(countingDb(perStatement), { projectId: p.id, actorId: "ann", organization: "org_a" }, undefined, 2)).toBe(4);
    const left = await env.DB.prepare("SELECT project_id, organization, COUNT(*) AS n FROM events WHERE actor_id = 'ann' AND project_id IN (?, ?) GROUP BY 1, 2 ORDER BY project_id = ? DESC")
      .bind(p.id, q.id, p.id)
      .all();
    expect(left.results).toEqual([
      { project_id: p.id, organization: "org_b", n: 3 },
      { project_id: q.id, organization: "org_a", n: 2 },
    ]);
  });
});
