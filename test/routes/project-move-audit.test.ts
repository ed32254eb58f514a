/**
 * Issue #23, self-audit of shard moves: the call of POST /v1/project/move
 * whose step switches the project records witness.project.moved in the
 * project's chain, once; the calls before it and after it record nothing.
 */
import { env, runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import { call, createProject, createScopedKey, ingestMany } from "../helpers";

const moved = async (key: string) =>
  ((await call("GET", "/v1/events?limit=100", { key })).json.data as any[]).filter((e) => e.action === "witness.project.moved");

describe("a shard move is recorded in the project's chain", () => {
  it("records witness.project.moved once, from the call that switches the project, and the ledger finishes the move on its own", async () => {
    const p = await createProject(undefined, { shard: 0 });
    const { key: admin, prefix } = await createScopedKey(p.id, ["admin"]);
    await ingestMany(p.key, [{ action: "doc.a" }, { action: "doc.b" }, { action: "doc.c" }]);
    await env.DB.prepare("UPDATE projects SET move_to = 1 WHERE id = ?").bind(p.id).run();
    // The route copies and switches within one call (a few events): that call records the move.
    const switched = await call("POST", "/v1/project/move", { key: admin, body: { shard: 1 } });
    expect(switched.status).toBe(200);
    expect(switched.json.data).toMatchObject({ status: "draining", from: 0, to: 1, switched: true });
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
    // Calling again while the old copy drains records nothing more.
    expect((await call("POST", "/v1/project/move", { key: admin, body: { shard: 1 } })).json.data).toMatchObject({ status: "draining" });
    expect(await moved(p.key)).toHaveLength(1);

    // The ledger's alarm was set for the drain's end; with the drain cut short (a test hook), it deletes the old copy itself.
    const ledger = ledgerOf(env, p.id);
    const drained = await ledger.moveShard(1, { drainSeconds: 0 });
    expect(["deleting", "done"]).toContain(drained.status);
    const stub = env.LEDGER.get(env.LEDGER.idFromName(p.id));
    for (let i = 0; i < 50 && (await env.DB.prepare("SELECT move_to FROM projects WHERE id = ?").bind(p.id).first<{ move_to: number | null }>())!.move_to !== null; i++) {
      await runDurableObjectAlarm(stub);
    }
    expect(await env.EVENTS_0.prepare("SELECT count(*) AS n FROM events WHERE project_id = ?").bind(p.id).first()).toEqual({ n: 0 });
    // The move is over: a call for the shard it is on says done and moves nothing; back to shard 0 was never requested.
    const already = await call("POST", "/v1/project/move", { key: admin, body: { shard: 1 } });
    expect(already.json.data).toMatchObject({ status: "done", from: 1, to: 1 });
    expect((await call("POST", "/v1/project/move", { key: admin, body: { shard: 0 } })).status).toBe(403);
    expect(await moved(p.key)).toHaveLength(1);

    const verify = await call("GET", "/v1/events/verify", { key: p.key });
    expect(verify.json.data).toMatchObject({ ok: true, verified: 4 });
  });
});
