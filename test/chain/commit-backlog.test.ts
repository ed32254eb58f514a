import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ProjectLedger } from "../../src/durable/project-ledger.do";
import { LAG_MS } from "../../src/chain/commit-backlog";
import { ledgerOf, packEvents } from "../../src/chain/ledger";
import type { NewEvent } from "../../src/model/new-event";
import { call, createProject, ingest, until } from "../helpers";
import { interceptBatches, sqlOf, storedActions } from "./commit-gate";

const event = (action: string): NewEvent => ({
  action, organization: null, actor_id: null, actor_type: null, actor_name: null, actor_email: null,
  targets: "[]", metadata: "{}", occurred_at: null, ip_address: null, user_agent: null,
});

const ledger = (projectId: string) => env.LEDGER.get(env.LEDGER.idFromName(projectId));

/**
 * The project's shard as its ledger sees it, made slow: every batch waits
 * `delayMs`, and while the gate is shut, until it opens. Reads from outside
 * the ledger (the worker's) are not slowed.
 */
async function slowShard(projectId: string, delayMs: number) {
  await lagBound(projectId);
  let open: (() => void) | null = null;
  let gate: Promise<void> = Promise.resolve();
  const state = { sent: 0, landed: 0, delayMs };
  await interceptBatches(projectId, async (statements, real) => {
    state.sent++;
    await new Promise((r) => setTimeout(r, state.delayMs));
    await gate;
    const result = await real.batch(statements);
    state.landed++;
    return result;
  });
  return {
    state,
    shut() {
      gate = new Promise((r) => (open = r));
    },
    open() {
      open?.();
      open = null;
      gate = Promise.resolve();
    },
  };
}

/** The ledger's lag bound as production's default (the test config sets it far above, for every other test). */
const lagBound = (projectId: string) =>
  runInDurableObject(ledger(projectId), (instance: ProjectLedger) => {
    (instance as unknown as { commits: { lagMs: number } }).commits.lagMs = LAG_MS;
  });

const marked = async (p: { id: string; db: D1Database }) => (await p.db.prepare("SELECT count(*) AS n FROM ingest_backlog WHERE project_id = ?").bind(p.id).first<{ n: number }>())!.n === 1;
const inD1 = async (p: { id: string; db: D1Database }) => (await storedActions(p)).map(([, action]) => action);
const listed = async (key: string) => ((await call("GET", "/v1/events?limit=100", { key })).json.data as Array<{ action: string }>).map((e) => e.action).reverse();

/** A project whose shard lagged once (so its ledger set the mark) and now holds every batch: appends are answered ahead of D1. */
async function heldShard() {
  const p = await createProject();
  const shard = await slowShard(p.id, 400);
  await ingest(p.key, { action: "slow.1" });
  shard.shut();
  return { p, shard };
}

/** A project whose shard holds everything, and an append of one event named as a worker names it, straight to the ledger: answered ahead of D1. */
async function namedAppendAhead(action: string) {
  const { p, shard } = await heldShard();
  const token = crypto.randomUUID();
  const appended = await ledgerOf(env, p.id).append({
    events: packEvents([event(action)]), idempotencyKey: null, requestHash: null, keyPrefix: p.prefix, rateLimit: 1200, catalogRevision: 0, sentAt: Date.now(), token,
  });
  expect(appended).toMatchObject({ status: "appended" });
  return { p, shard, token };
}

describe("answers ahead of a lagging shard (issue 38, item 3)", () => {
  it("answers once journaled while the shard lags, and a read right after an answer shows it", async () => {
    const p = await createProject();
    const shard = await slowShard(p.id, 400);
    // A commit slower than the lag bound is answered after D1 as before, and the mark is set after it.
    expect((await ingest(p.key, { action: "slow.1" })).status).toBe(201);
    expect(await marked(p)).toBe(true);
    // Now the shard holds everything: the next append is answered with nothing of it in D1.
    shard.shut();
    const ahead = await call("POST", "/v1/events/batch", { key: p.key, body: { events: [{ action: "ahead.1" }, { action: "ahead.2" }] } });
    expect(ahead.status).toBe(201);
    expect(ahead.json.data).toMatchObject([{ seq: 2 }, { seq: 3 }]);
    expect(await inD1(p)).toEqual(["slow.1"]);
    // A list waits for the ledger to index what it answered, and shows it.
    const list = listed(p.key);
    setTimeout(() => shard.open(), 200);
    expect(await list).toEqual(["slow.1", "ahead.1", "ahead.2"]);
    expect(await inD1(p)).toEqual(["slow.1", "ahead.1", "ahead.2"]);
    expect((await call("GET", `/v1/events/${(ahead.json.data as Array<{ id: string }>)[0].id}`, { key: p.key })).status).toBe(200);
    // A public receipt names only its event: it finds the project by the id's tag among the marked ones.
    shard.shut();
    const more = await ingest(p.key, { action: "ahead.3" });
    expect(await inD1(p)).toEqual(["slow.1", "ahead.1", "ahead.2"]);
    const receipt = call("GET", `/v1/receipts/${(more.json.data as { id: string }).id}`);
    setTimeout(() => shard.open(), 200);
    expect((await receipt).status).toBe(200);
    expect((await receipt).json.data).toMatchObject({ event_id: (more.json.data as { id: string }).id, exists: true, valid: true });
    // Verify anchors on the ledger's head, which it gives once D1 holds the chain up to it: ok, not a chain cut short.
    shard.shut();
    expect((await ingest(p.key, { action: "ahead.4" })).status).toBe(201);
    const verify = call("GET", "/v1/events/verify", { key: p.key });
    setTimeout(() => shard.open(), 200);
    expect((await verify).json.data).toMatchObject({ ok: true, verified: 5 });
  });

  it("answers a read 429 with Retry-After when the backlog is not indexed within 10 s, and the read after it shows everything", async () => {
    const { p, shard } = await heldShard();
    expect((await ingest(p.key, { action: "ahead.1" })).status).toBe(201);
    // The shard holds the indexing batch: the list waits its 10 s for the ledger, then says to come back, with no partial page.
    const started = Date.now();
    const behind = await call("GET", "/v1/events", { key: p.key });
    expect(Date.now() - started).toBeGreaterThanOrEqual(10_000);
    expect(behind.status).toBe(429);
    expect(behind.json.error).toMatchObject({ code: "RATE_LIMITED", details: { reason: "indexing_behind" } });
    expect(behind.json.error.message).not.toMatch(/nothing was stored/);
    expect(Number(behind.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
    // The append it was behind was answered, and nothing was lost while the read waited.
    shard.open();
    expect(await listed(p.key)).toEqual(["slow.1", "ahead.1"]);
  });

  it("deletes the mark once the shard keeps up again, and answers after D1 from then on", async () => {
    const p = await createProject();
    const shard = await slowShard(p.id, 400);
    await ingest(p.key, { action: "slow.1" });
    expect(await marked(p)).toBe(true);
    // The shard is fast again: a batch drains the backlog within the bound, and the next deletes the mark with the last of it.
    shard.state.delayMs = 0;
    for (const action of ["fast.1", "fast.2", "fast.3"]) expect((await ingest(p.key, { action })).status).toBe(201);
    await ledger(p.id).indexed();
    expect(await marked(p)).toBe(false);
    // From then on an answer waits on D1 again: what was answered is in D1 when the answer comes.
    const after = shard.state.landed;
    expect((await ingest(p.key, { action: "after.mark" })).status).toBe(201);
    expect(shard.state.landed).toBe(after + 1);
    expect(await inD1(p)).toEqual(["slow.1", "fast.1", "fast.2", "fast.3", "after.mark"]);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 5 });
  });

  it("indexes, at its next start, what a stopped ledger answered ahead of D1, and the chain goes on from it", async () => {
    const { p } = await heldShard();
    expect((await ingest(p.key, { action: "ahead.1" })).status).toBe(201);
    expect((await call("POST", "/v1/events/batch", { key: p.key, body: { events: [{ action: "ahead.2" }, { action: "ahead.3" }] } })).status).toBe(201);
    expect(await inD1(p)).toEqual(["slow.1"]);
    // The runtime stops the ledger with two commits answered and not in D1.
    await runInDurableObject(ledger(p.id), (_: ProjectLedger, state: DurableObjectState) => state.abort("test: the ledger stops with a backlog")).catch(() => {});
    // The next read finds the mark and asks the new instance, which sends its journal's commits first.
    expect(await listed(p.key)).toEqual(["slow.1", "ahead.1", "ahead.2", "ahead.3"]);
    const next = await ingest(p.key, { action: "after.start" });
    expect(next.json.data).toMatchObject({ seq: 5 });
    expect(await inD1(p)).toEqual(["slow.1", "ahead.1", "ahead.2", "ahead.3", "after.start"]);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 5 });
  });

  it("indexes, at its next start, only the commits whose batch had not landed when the ledger stopped right after one landed", async () => {
    const p = await createProject();
    await lagBound(p.id);
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let stopAfterLanding = false;
    await interceptBatches(p.id, async (statements, real, _restore, state) => {
      await new Promise((r) => setTimeout(r, 400));
      if (!stopAfterLanding) return real.batch(statements);
      await gate;
      const landed = await real.batch(statements);
      // The batch is in D1; the instance stops before it records that (indexed_head) or sends the next one.
      state.abort("test: the ledger stops right after an indexing batch landed");
      return landed;
    });
    await ingest(p.key, { action: "slow.1" });
    expect(await marked(p)).toBe(true);
    stopAfterLanding = true;
    // The first commit's batch waits at the gate; the second is answered ahead behind it.
    expect((await ingest(p.key, { action: "ahead.1" })).status).toBe(201);
    expect((await call("POST", "/v1/events/batch", { key: p.key, body: { events: [{ action: "ahead.2" }, { action: "ahead.3" }] } })).status).toBe(201);
    expect(await inD1(p)).toEqual(["slow.1"]);
    open();
    await until(async () => (await inD1(p)).length === 2);
    // The next read finds the mark and asks a new instance: it skips the commit that landed and sends the one that did not.
    expect(await listed(p.key)).toEqual(["slow.1", "ahead.1", "ahead.2", "ahead.3"]);
    expect(await storedActions(p)).toEqual([[1, "slow.1"], [2, "ahead.1"], [3, "ahead.2"], [4, "ahead.3"]]);
    expect((await ingest(p.key, { action: "after.start" })).json.data).toMatchObject({ seq: 5 });
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 5 });
  });

  it("replays an append under an Idempotency-Key answered ahead of D1, stored once", async () => {
    const { p, shard } = await heldShard();
    const first = await call("POST", "/v1/events", { key: p.key, body: { action: "keyed" }, headers: { "Idempotency-Key": "backlog-1" } });
    expect(first.status).toBe(201);
    // The ledger finds the key among the commits it answered ahead of D1.
    const again = await call("POST", "/v1/events", { key: p.key, body: { action: "keyed" }, headers: { "Idempotency-Key": "backlog-1" } });
    expect(again.status).toBe(201);
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
    expect(again.json.data).toMatchObject({ seq: 2, id: (first.json.data as { id: string }).id });
    expect(await inD1(p)).toEqual(["slow.1"]);
    shard.open();
    await ledger(p.id).indexed();
    expect(await inD1(p)).toEqual(["slow.1", "keyed"]);
  });

  it("answers a lost answer of an append in the backlog with its events, and gives nothing up", async () => {
    const { p, shard, token } = await namedAppendAhead("named.ahead");
    // Its worker lost the answer and asks: the ledger answers from its backlog, D1 holding nothing of it yet.
    const lost = await ledgerOf(env, p.id).lostAppend(token, Date.now() - 1000);
    expect(lost).toHaveLength(1);
    expect(JSON.parse(lost![0])).toMatchObject({ seq: 2, action: "named.ahead" });
    expect(await inD1(p)).toEqual(["slow.1"]);
    shard.open();
    await ledger(p.id).indexed();
    expect((await p.db.prepare("SELECT count(*) AS n FROM given_up_appends WHERE token = ?").bind(token).first<{ n: number }>())!.n).toBe(0);
  });

  it("indexes a commit of the backlog whose append a worker of the older code gave up in D1, without its name, and loses nothing", async () => {
    const { p, shard, token } = await namedAppendAhead("given.up.ahead");
    // A worker that does not know the mark (the older code, during a deploy) gave the append up in D1.
    await p.db.prepare("INSERT INTO given_up_appends (token, given_up_at) VALUES (?, ?)").bind(token, new Date().toISOString()).run();
    shard.open();
    await ledger(p.id).indexed();
    // D1 refused the batch for the name; the commit is in the chain, so it was indexed without it.
    expect(await inD1(p)).toEqual(["slow.1", "given.up.ahead"]);
    expect((await p.db.prepare("SELECT append_name FROM events WHERE project_id = ? AND seq = 2").bind(p.id).first<{ append_name: string | null }>())!.append_name).toBeNull();
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 2 });
  });

  it("indexes, at its next start, a commit put in the chain while the mark's delete was in flight, and sets the mark again first", async () => {
    const p = await createProject();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let phase: "slow" | "fast" | "clearing" | "stop" = "slow";
    await lagBound(p.id);
    await interceptBatches(p.id, async (statements, real, _restore, state) => {
      if (phase === "stop") {
        state.abort("test: the runtime stops the ledger before it indexes a commit made while the mark went");
        throw new Error("unreachable: the object was reset");
      }
      if (phase === "slow") await new Promise((r) => setTimeout(r, 400));
      if (statements.some((st) => sqlOf(st).statement.startsWith("DELETE FROM ingest_backlog"))) {
        phase = "clearing";
        await held;
        const result = await real.batch(statements);
        phase = "stop";
        return result;
      }
      return real.batch(statements);
    });
    await ingest(p.key, { action: "slow.1" });
    expect(await marked(p)).toBe(true);
    phase = "fast";
    // A fast batch drains the backlog, so the next one carries the mark's delete; it is held in flight.
    await ingest(p.key, { action: "fast.1" });
    await ingest(p.key, { action: "fast.2" });
    await until(async () => phase === "clearing");
    // Meanwhile a commit is made: in the chain, and answered only once indexed.
    const during = ingest(p.key, { action: "during.clear" });
    // In the backlog behind the batch in flight: journaled, and the head moved past it.
    await until(() =>
      runInDurableObject(ledger(p.id), (instance: ProjectLedger) => (instance as unknown as { commits: { backlog: { items: unknown[] } } }).commits.backlog.items.length === 2),
    );
    release();
    // The mark's delete lands, and the runtime stops the ledger before the commit's own batch: its worker's look
    // starts the ledger again, which finds its head past D1, writes the mark, and indexes the journal's commit.
    const answer = await during;
    expect(answer.status).toBe(201);
    expect(answer.json.data).toMatchObject({ seq: 4, action: "during.clear" });
    expect(await listed(p.key)).toEqual(["slow.1", "fast.1", "fast.2", "during.clear"]);
    await ledger(p.id).indexed();
    expect(await inD1(p)).toEqual(["slow.1", "fast.1", "fast.2", "during.clear"]);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 4 });
  });
});
