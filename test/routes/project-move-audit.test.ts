/**
 * Issue #23, self-audit of shard moves: the call of POST /v1/project/move
 * that completes a move records witness.project.moved in the project's chain,
 * once; the calls before it and after it record nothing.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import { call, createProject, createScopedKey, ingestMany } from "../helpers";

const moved = async (key: string) =>
  ((await call("GET", "/v1/events?limit=100", { key })).json.data as any[]).filter((e) => e.action === "witness.project.moved");

describe("a completed shard move is recorded in the project's chain", () => {
  it("records witness.project.moved once, from the call that finishes the move", async () => {
    const p = await createProject(undefined, { shard: 0 });
    const { key: admin, prefix } = await createScopedKey(p.id, ["admin"]);
    await ingestMany(p.key, [{ action: "doc.a" }, { action: "doc.b" }, { action: "doc.c" }]);
    await env.DB.prepare("UPDATE projects SET move_to = 1 WHERE id = ?").bind(p.id).run();
    // The copy, the switch and a drain cut to nothing (a test hook the route does not offer),
    // up to the deletion of the old copy; the route then finishes the move.
    const ledger = ledgerOf(env, p.id);
    for (let i = 0; i < 50; i++) {
      const step = await ledger.moveShard(1, { drainSeconds: 0 });
      if (step.status === "deleting") break;
      expect(["clearing", "copying", "draining"]).toContain(step.status);
    }
    expect(await moved(p.key)).toEqual([]);

    const done = await call("POST", "/v1/project/move", { key: admin, body: { shard: 1 } });
    expect(done.status).toBe(200);
    expect(done.json.data).toMatchObject({ status: "done", from: 0, to: 1 });
    const records = await moved(p.key);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      actor: { type: "api_key", id: prefix },
      targets: [{ type: "project", id: p.id, name: null }],
      metadata: { from_shard: 0, to_shard: 1 },
      seq: 4,
    });
    // Written to the new shard, like every event after the switch.
    const row = await env.EVENTS_1.prepare("SELECT action FROM events WHERE project_id = ? AND seq = 4").bind(p.id).first();
    expect(row).toEqual({ action: "witness.project.moved" });

    // Calling again records nothing: the move is over, so the call is refused.
    expect((await call("POST", "/v1/project/move", { key: admin, body: { shard: 1 } })).status).toBe(403);
    // A request to move to the shard it is already on ends at once, and nothing moved.
    await env.DB.prepare("UPDATE projects SET move_to = 1 WHERE id = ?").bind(p.id).run();
    const already = await call("POST", "/v1/project/move", { key: admin, body: { shard: 1 } });
    expect(already.json.data).toMatchObject({ status: "done", from: 1, to: 1 });
    expect(await moved(p.key)).toHaveLength(1);

    const verify = await call("GET", "/v1/events/verify", { key: p.key });
    expect(verify.json.data).toMatchObject({ ok: true, verified: 4 });
  });
});
