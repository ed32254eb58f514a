import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import { loadKeyring } from "../../src/sealing/signing-keys";
import { verifyLive } from "../../src/chain/verify";
import { call, createProject, ingestMany, interceptPrepare } from "../helpers";

const events = (n: number) => Array.from({ length: n }, (_, i) => ({ action: "doc.edited", actor: { id: `u_${i % 5}` }, metadata: { i } }));

/** Steps the project's move to `shard` until it is done (no drain: the source rows go at once). */
async function finishMove(projectId: string, shard: number) {
  const ledger = ledgerOf(env, projectId);
  for (let i = 0; i < 500; i++) if ((await ledger.moveShard(shard, { drainSeconds: 0 })).status === "done") return;
  throw new Error("move did not finish");
}

/**
 * env, except that EVENTS_0 finishes the project's move to shard 1 (copy,
 * switch, delete the source rows) just before the walk reads its page `atPage`:
 * a walk that outlasts a move's drain, as a long verify in production can.
 */
function moveDuringWalk(projectId: string, atPage: number): Env {
  let pages = 0;
  const source = interceptPrepare(env.EVENTS_0, (sql, statement) => {
    // Verify's pages (model/stand-ins.ts, checkedRowsSql): the only statement that names its rows' `unlisted`.
    if (!sql.includes("AS unlisted FROM page")) return statement;
    return {
      bind: (...params: unknown[]) => {
        const bound = statement.bind(...params);
        return {
          raw: async () => {
            if (++pages === atPage) await finishMove(projectId, 1);
            return bound.raw();
          },
        };
      },
    } as unknown as D1PreparedStatement;
  });
  return new Proxy(env, { get: (target, key) => (key === "EVENTS_0" ? source : Reflect.get(target, key)) }) as Env;
}

describe("verify while the project moves to another shard", () => {
  it("walks again on the new shard when the move deleted the rows it was reading, and reports ok", async () => {
    const p = await createProject(undefined, { shard: 0 });
    await ingestMany(p.key, events(4_500));
    await env.DB.prepare("UPDATE projects SET move_to = 1 WHERE id = ?").bind(p.id).run();
    const ring = await loadKeyring(env.SIGNING_KEYS);
    const result = await verifyLive(moveDuringWalk(p.id, 2), ring, p.id, { from: null, to: null });
    expect(result).toMatchObject({ ok: true, verified: 4_500, failure: null });
    expect((await env.DB.prepare("SELECT shard FROM projects WHERE id = ?").bind(p.id).first())!.shard).toBe(1);
    // And the endpoint agrees once the project lives on its new shard.
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 4_500 });
  }, 60_000);
});
