import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ledgerOf, packEvents } from "../../src/chain/ledger";
import type { NewEvent } from "../../src/model/new-event";
import { call, createProject, ingest, until } from "../helpers";
import { holdCommits, queuedEvents, storedActions } from "./commit-gate";

const event = (action: string): NewEvent => ({
  action, organization: null, actor_id: null, actor_type: null, actor_name: null, actor_email: null,
  targets: "[]", metadata: "{}", occurred_at: null, ip_address: null, user_agent: null,
});

/** An append named `token`, straight to the ledger, as the worker sends it. */
function append(p: { id: string; prefix: string }, action: string, token: string) {
  return ledgerOf(env, p.id).append({
    events: packEvents([event(action)]), idempotencyKey: null, requestHash: null, keyPrefix: p.prefix, rateLimit: 1200, catalogRevision: 0,
    sentAt: Date.now(), token,
  });
}

/** What a call came to, its failure included (handled from the start: the ledger may refuse it before the test asks). */
const outcome = (call: PromiseLike<unknown>) => Promise.resolve(call).then((value) => ({ value, error: null }), (error: unknown) => ({ value: null, error: String(error) }));

/**
 * A worker whose call to append failed asks the ledger whether it was stored
 * (LedgerChainRpc.lostAppend): the ledger answers for the appends it holds,
 * without writing anything to D1.
 */
describe("an append whose answer was lost, asked of the ledger", () => {
  it("drops an append still queued, commits the rest, and refuses the append should it arrive again", async () => {
    const p = await createProject();
    await ingest(p.key, { action: "a" });
    const release = await holdCommits(p.id);
    const lead = append(p, "lead", "lead-token");
    await until(async () => (await queuedEvents(p.id)) >= 1);
    const queued = outcome(append(p, "queued", "queued-token"));
    const kept = append(p, "kept", "kept-token");
    await until(async () => (await queuedEvents(p.id)) >= 3);
    // The worker of the queued append lost its call: the ledger drops it, and says nothing of it was stored.
    expect(await ledgerOf(env, p.id).lostAppend("queued-token", Date.now())).toBeNull();
    expect((await queued).error).toMatch(/gave it up/);
    release();
    expect((await lead).status).toBe("appended");
    expect((await kept).status).toBe("appended");
    expect(await storedActions(p)).toEqual([[1, "a"], [2, "lead"], [3, "kept"]]);
    // No name was given up in D1: the ledger knew.
    expect((await p.db.prepare("SELECT count(*) AS n FROM given_up_appends WHERE token = ?").bind("queued-token").first<{ n: number }>())!.n).toBe(0);
    // The same append arriving after all (a call delivered late) stores nothing.
    expect((await outcome(append(p, "queued", "queued-token"))).error).toMatch(/gave it up/);
    expect(await storedActions(p)).toEqual([[1, "a"], [2, "lead"], [3, "kept"]]);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 3 });
  });

  it("answers an append being committed with its events once the commit is done", async () => {
    const p = await createProject();
    await ingest(p.key, { action: "a" });
    const release = await holdCommits(p.id);
    const committing = append(p, "committing", "committing-token");
    await until(async () => (await queuedEvents(p.id)) >= 1);
    const asked = ledgerOf(env, p.id).lostAppend("committing-token", Date.now());
    release();
    const events = (await asked)!.map((e) => JSON.parse(e));
    expect(events).toMatchObject([{ seq: 2, action: "committing" }]);
    const answered = await committing;
    expect(answered.status === "appended" && JSON.parse(answered.events[0])).toEqual(events[0]);
    expect(await storedActions(p)).toEqual([[1, "a"], [2, "committing"]]);
  });

  it("looks in D1 for an append it does not hold, and gives it up there", async () => {
    const p = await createProject();
    const stored = await append(p, "stored", "stored-token");
    expect(stored.status).toBe("appended");
    // Held by no instance now (it was committed): found in D1, by the name its commit keeps.
    expect((await ledgerOf(env, p.id).lostAppend("stored-token", Date.now() - 1000))!.map((e) => JSON.parse(e).action)).toEqual(["stored"]);
    // Never seen: not stored, and given up in D1, so that no batch naming it can land later.
    expect(await ledgerOf(env, p.id).lostAppend("never-token", Date.now())).toBeNull();
    expect((await p.db.prepare("SELECT count(*) AS n FROM given_up_appends WHERE token = ?").bind("never-token").first<{ n: number }>())!.n).toBe(1);
  });
});
