import { env } from "cloudflare:workers";
import { createExecutionContext, createScheduledController, evictDurableObject, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { idMillis } from "../../src/model/event-id";
import { insertEventsStatements } from "../../src/chain/event-insert";
import type { ProjectLedger } from "../../src/durable/project-ledger.do";
import worker from "../../src/index";
import { holdCommits, interceptBatches, queuedEvents, rowAfter, sqlOf, stopOnNextBatch, storedActions, whileLooksRefused } from "../chain/commit-gate";
import { call, createProject, ingest, until } from "../helpers";

const ledger = (projectId: string) => env.LEDGER.get(env.LEDGER.idFromName(projectId));

/** Restarts the ledger's head loading, as after an eviction or a failed commit. */
async function reloadHead(projectId: string) {
  await runInDurableObject(ledger(projectId), async (instance: ProjectLedger) => {
    await (instance as unknown as { loadHead(): Promise<void> }).loadHead();
  });
}

describe("ProjectLedger head recovery", () => {
  it("adopts rows of a commit that landed in D1 when only its answer was lost", async () => {
    const p = await createProject();
    const first = await ingest(p.key, { action: "a" });
    const row = await rowAfter(p.id, first.json.data, env.SIGNING_KEYS);
    await p.db.batch(insertEventsStatements(p.db, [row]));
    await reloadHead(p.id);
    expect(await ledger(p.id).anchor()).toMatchObject({ seq: 2, hash: row.hash });
    const next = await ingest(p.key, { action: "b" });
    expect(next.json.data).toMatchObject({ seq: 3, prev_hash: row.hash });
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 3 });
    // The adopted event is counted in the project's activity, as each committed one is, once.
    const actions = (await call("GET", "/v1/actions", { key: p.key })).json.data;
    expect(actions.map((a: { action: string; count: number }) => [a.action, a.count])).toEqual([["a", 1], ["b", 1], ["landed.late", 1]]);
  });

  it("answers a commit whose rows landed but whose answer was lost as stored, so a retry does not store it twice", async () => {
    const p = await createProject();
    const first = await ingest(p.key, { action: "a" });
    // The shard commits the next batch, then the answer is lost on its way back (D1's "Network connection lost.").
    await interceptBatches(p.id, async (statements, real, restore) => {
      await real.batch(statements);
      restore();
      throw new Error("D1_ERROR: Network connection lost.");
    });
    const batch = await call("POST", "/v1/events/batch", { key: p.key, body: { events: [{ action: "lost.1" }, { action: "lost.2" }, { action: "lost.3" }] } });
    expect(batch.status).toBe(201);
    expect(batch.json.data.map((e: { seq: number }) => e.seq)).toEqual([2, 3, 4]);
    expect(batch.json.data[0].prev_hash).toBe(first.json.data.hash);
    // Stored once each, readable, and the chain goes on from them.
    const { results } = await p.db.prepare("SELECT seq FROM events WHERE project_id = ? ORDER BY seq").bind(p.id).all<{ seq: number }>();
    expect(results.map((r) => r.seq)).toEqual([1, 2, 3, 4]);
    expect((await call("GET", `/v1/events/${batch.json.data[2].id}`, { key: p.key })).json.data).toEqual(batch.json.data[2]);
    const next = await ingest(p.key, { action: "b" });
    expect(next.json.data).toMatchObject({ seq: 5, prev_hash: batch.json.data[2].hash });
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 5 });
  });

  it("answers an append whose ledger was stopped after its commit landed as stored, so a retry does not store it twice", async () => {
    const p = await createProject();
    const first = await ingest(p.key, { action: "a" });
    await stopOnNextBatch(p.id, "after_commit");
    const batch = await call("POST", "/v1/events/batch", { key: p.key, body: { events: [{ action: "stopped.1" }, { action: "stopped.2" }] } });
    expect(batch.status).toBe(201);
    expect(batch.json.data.map((e: { seq: number; action: string }) => [e.seq, e.action])).toEqual([[2, "stopped.1"], [3, "stopped.2"]]);
    expect(batch.json.data[0].prev_hash).toBe(first.json.data.hash);
    // The ledger's count of the key was lost with it; the next instance counts the request, and the answer says so.
    expect(Number(batch.headers.get("RateLimit-Limit"))).toBe(1200);
    expect(Number(batch.headers.get("RateLimit-Remaining"))).toBeLessThan(1200);
    // What it answered is what is stored, once, and the chain goes on from it under the ledger's next instance.
    expect((await call("GET", `/v1/events/${batch.json.data[1].id}`, { key: p.key })).json.data).toEqual(batch.json.data[1]);
    const { results } = await p.db.prepare("SELECT seq FROM events WHERE project_id = ? ORDER BY seq").bind(p.id).all<{ seq: number }>();
    expect(results.map((r) => r.seq)).toEqual([1, 2, 3]);
    const next = await ingest(p.key, { action: "b" });
    expect(next.json.data).toMatchObject({ seq: 4, prev_hash: batch.json.data[1].hash });
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 4 });
  });

  it("answers an append whose ledger was stopped after its journal and before D1 as stored: the ledger's next instance sends its batch", async () => {
    const p = await createProject();
    const first = await ingest(p.key, { action: "a" });
    await stopOnNextBatch(p.id, "before_commit");
    // The worker asks the ledger, whose next instance starts by sending the journaled batch, then finds the append.
    const stored = await call("POST", "/v1/events/batch", { key: p.key, body: { events: [{ action: "journaled.1" }, { action: "journaled.2" }] } });
    expect(stored.status).toBe(201);
    expect(stored.json.data.map((e: { seq: number; action: string }) => [e.seq, e.action])).toEqual([[2, "journaled.1"], [3, "journaled.2"]]);
    expect(stored.json.data[0].prev_hash).toBe(first.json.data.hash);
    expect((await call("GET", `/v1/events/${stored.json.data[1].id}`, { key: p.key })).json.data).toEqual(stored.json.data[1]);
    const { results } = await p.db.prepare("SELECT seq FROM events WHERE project_id = ? ORDER BY seq").bind(p.id).all<{ seq: number }>();
    expect(results.map((r) => r.seq)).toEqual([1, 2, 3]);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 3 });
  });

  it("answers an append whose ledger was stopped before its journal was stored as a failure that stored nothing", async () => {
    const p = await createProject();
    await ingest(p.key, { action: "a" });
    await stopOnNextBatch(p.id, "before_commit", "not_stored");
    const failed = await call("POST", "/v1/events", { key: p.key, body: { action: "never.stored" } });
    expect(failed.status).toBe(500);
    expect(failed.json.error.message).toMatch(/stored nothing/);
    const { results } = await p.db.prepare("SELECT seq FROM events WHERE project_id = ? ORDER BY seq").bind(p.id).all<{ seq: number }>();
    expect(results.map((r) => r.seq)).toEqual([1]);
    // The retry it was told is safe stores the event once.
    const retry = await ingest(p.key, { action: "never.stored" });
    expect(retry.json.data).toMatchObject({ seq: 2, action: "never.stored" });
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 2 });
  });

  it("refuses a commit that reaches D1 after its worker answered that nothing was stored, so a retry does not store it twice", async () => {
    const p = await createProject();
    await ingest(p.key, { action: "a" });
    // A batch with no journal behind it: sent by an instance whose journal write was lost, or by code from before
    // the journal during a deploy. Nothing sends it again, but D1 may still run it late.
    const inFlight = await stopOnNextBatch(p.id, "in_flight", "not_stored");
    const failed = await call("POST", "/v1/events/batch", { key: p.key, body: { events: [{ action: "late.1" }, { action: "late.2" }] } });
    expect(failed.status).toBe(500);
    expect(failed.json.error.message).toMatch(/stored nothing and is safe to retry/);
    expect(inFlight.some((s) => s.sql.startsWith("INSERT INTO commit_spans"))).toBe(true);
    // D1 runs the stopped ledger's batch now: it names the append its worker gave up on, so none of it is stored.
    await expect(p.db.batch(inFlight.map((s) => p.db.prepare(s.sql).bind(...s.params)))).rejects.toThrow(/gave up on; nothing of it was stored/);
    const { results } = await p.db.prepare("SELECT seq FROM events WHERE project_id = ? ORDER BY seq").bind(p.id).all<{ seq: number }>();
    expect(results.map((r) => r.seq)).toEqual([1]);
    // The retry the client was told is safe stores each event once.
    const retry = await call("POST", "/v1/events/batch", { key: p.key, body: { events: [{ action: "late.1" }, { action: "late.2" }] } });
    expect(retry.status).toBe(201);
    expect(retry.json.data.map((e: { seq: number; action: string }) => [e.seq, e.action])).toEqual([[2, "late.1"], [3, "late.2"]]);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 3 });
    // Only the failed call wrote a name; the commits that answered wrote none.
    const given = await p.db.prepare("SELECT count(*) AS n FROM given_up_appends").first<{ n: number }>();
    expect(given?.n).toBeGreaterThanOrEqual(1);
  });

  it("finds a lone event's append by the name on its row, or refuses its late commit by it: a commit of one event has no span", async () => {
    const p = await createProject();
    await ingest(p.key, { action: "a" });
    // Stopped after its commit: the worker finds the append by the name its row carries, live in the time index at
    // its instant (migration 0037), backfilled in the id index (0036).
    const row = (seq: number) => p.db.prepare("SELECT id_indexed, append_name IS NOT NULL AS named FROM events WHERE project_id = ? AND seq = ?").bind(p.id, seq).first();
    await stopOnNextBatch(p.id, "after_commit");
    const landed = await call("POST", "/v1/events", { key: p.key, body: { action: "lone.landed" } });
    expect(landed.status).toBe(201);
    expect(landed.json.data).toMatchObject({ seq: 2, action: "lone.landed" });
    expect(await row(2)).toEqual({ id_indexed: 2, named: 1 });
    await stopOnNextBatch(p.id, "after_commit");
    const backfilled = await call("POST", "/v1/events", { key: p.key, body: { action: "lone.backfilled", occurred_at: "2026-01-02T03:04:05.000Z" } });
    expect(backfilled.status).toBe(201);
    expect(backfilled.json.data).toMatchObject({ seq: 3, action: "lone.backfilled" });
    expect(await row(3)).toEqual({ id_indexed: 1, named: 1 });
    expect((await p.db.prepare("SELECT count(*) AS n FROM commit_spans WHERE project_id = ?").bind(p.id).first<{ n: number }>())!.n).toBe(0);
    // Stopped with its batch in flight and no journal behind it: the worker answers "nothing stored", and the row's
    // name refuses the batch when D1 runs it.
    const inFlight = await stopOnNextBatch(p.id, "in_flight", "not_stored");
    const failed = await call("POST", "/v1/events", { key: p.key, body: { action: "lone.late" } });
    expect(failed.status).toBe(500);
    expect(failed.json.error.message).toMatch(/stored nothing and is safe to retry/);
    expect(inFlight.some((s) => s.sql.startsWith("INSERT INTO commit_spans"))).toBe(false);
    await expect(p.db.batch(inFlight.map((s) => p.db.prepare(s.sql).bind(...s.params)))).rejects.toThrow(/gave up on; nothing of it was stored/);
    const retry = await ingest(p.key, { action: "lone.late" });
    expect(retry.json.data).toMatchObject({ seq: 4, action: "lone.late" });
    expect(await storedActions(p)).toEqual([[1, "a"], [2, "lone.landed"], [3, "lone.backfilled"], [4, "lone.late"]]);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 4 });
  });

  it("keeps receive times in order when it starts again on a machine whose clock is behind the last one's", async () => {
    const p = await createProject();
    const first = (await ingest(p.key, { action: "clock.first" })).json.data;
    const receivedAt = async (id: string) => Date.parse((await p.db.prepare("SELECT received_at FROM events WHERE id = ?").bind(id).first<{ received_at: string }>())!.received_at);
    const firstMs = await receivedAt(first.id);
    await evictDurableObject(ledger(p.id));
    // The next start runs 10 s behind the clock that received the first event (a Durable Object moved machines).
    vi.useFakeTimers({ toFake: ["Date"] });
    let next: { id: string; seq: number };
    try {
      vi.setSystemTime(firstMs - 10_000);
      next = (await ingest(p.key, { action: "clock.next" })).json.data;
    } finally {
      vi.useRealTimers();
    }
    // It goes on after the head's commit (read from the head's own row, whose hash covers its id), not before it.
    expect(next.seq).toBe(first.seq + 1);
    expect(await receivedAt(next.id)).toBe(firstMs + 1);
    expect(idMillis(next.id)).toBe(firstMs + 1);
    // A clock more than a minute behind the head's commit is not skew but a clock gone wrong (on either side): the
    // ledger stamps by its own clock again rather than run ahead of real time for as long as the gap.
    await evictDurableObject(ledger(p.id));
    vi.useFakeTimers({ toFake: ["Date"] });
    let late: { id: string; seq: number };
    try {
      vi.setSystemTime(firstMs - 10 * 60_000);
      late = (await ingest(p.key, { action: "clock.late" })).json.data;
    } finally {
      vi.useRealTimers();
    }
    expect(await receivedAt(late.id)).toBe(firstMs - 10 * 60_000);
    // All found by id (a lone live event is found at its id's instant: model/event-lookup.ts), and verified.
    for (const e of [first, next, late]) expect((await call("GET", `/v1/events/${e.id}`, { key: p.key })).status).toBe(200);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 3 });
  });

  it("commits a group again without an append its worker gave up on while the ledger lived, so the group's other appends are stored", async () => {
    const p = await createProject();
    await ingest(p.key, { action: "a" });
    // The ledger's commits wait (a slow database), so the two appends sent behind the lead's are committed together.
    const release = await holdCommits(p.id);
    const lead = call("POST", "/v1/events", { key: p.key, body: { action: "lead" } });
    await until(async () => (await queuedEvents(p.id)) >= 1);
    const pooled = Promise.all(["pooled.1", "pooled.2"].map((action) => call("POST", "/v1/events", { key: p.key, body: { action } })));
    await until(async () => (await queuedEvents(p.id)) >= 3);
    // Before that group's batch runs, the worker of one of its appends gives it up (as after its call to the ledger failed).
    let givenUp: Array<[string, number, number]> = [];
    await interceptBatches(p.id, async (statements, slow, restore) => {
      const span = statements.map(sqlOf).find((s) => s.statement.startsWith("INSERT INTO commit_spans"));
      const appends = span ? (JSON.parse(span.params[4] as string) as Array<[string, number, number]>) : [];
      if (appends.length === 2) {
        restore();
        givenUp = appends;
        await slow.prepare("INSERT INTO given_up_appends (token, given_up_at) VALUES (?, ?)").bind(appends[0][0], new Date().toISOString()).run();
      }
      return slow.batch(statements);
    });
    release();
    expect((await lead).status).toBe(201);
    const answers = await pooled;
    expect(givenUp).toHaveLength(2);
    const kept = answers.find((r) => r.status === 201)!;
    const given = answers.find((r) => r.status !== 201)!;
    expect(kept).toBeDefined();
    // The given-up append stored nothing and its answer says so; the other one is stored, once, right after the lead.
    expect(given.status).toBe(500);
    expect(given.json.error.message).toMatch(/stored nothing and is safe to retry/);
    expect(kept.json.data).toMatchObject({ seq: 3 });
    expect(await storedActions(p)).toEqual([[1, "a"], [2, "lead"], [3, kept.json.data.action]]);
    const lost = kept.json.data.action === "pooled.1" ? "pooled.2" : "pooled.1";
    const retry = await ingest(p.key, { action: lost });
    expect(retry.json.data).toMatchObject({ seq: 4, action: lost });
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 4 });
  });

  it("forgets names given up a day ago at the daily cron, on a shard where no call failed since", async () => {
    const p = await createProject();
    const [old, recent] = [crypto.randomUUID(), crypto.randomUUID()];
    await p.db.batch([
      p.db.prepare("INSERT INTO given_up_appends (token, given_up_at) VALUES (?, ?)").bind(old, new Date(Date.now() - 25 * 3_600_000).toISOString()),
      p.db.prepare("INSERT INTO given_up_appends (token, given_up_at) VALUES (?, ?)").bind(recent, new Date(Date.now() - 60_000).toISOString()),
    ]);
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ scheduledTime: new Date(), cron: "17 3 * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
    const { results } = await p.db.prepare("SELECT token FROM given_up_appends WHERE token IN (?, ?)").bind(old, recent).all<{ token: string }>();
    // The recent one may still meet a batch in flight; the old one cannot.
    expect(results.map((r) => r.token)).toEqual([recent]);
  });

  it("says it does not know whether an append was stored when its ledger failed and the database could not be asked", async () => {
    const p = await createProject();
    await ingest(p.key, { action: "a" });
    // A batch with no journal behind it (its instance's journal write was lost): only D1 can still run it.
    const inFlight = await stopOnNextBatch(p.id, "in_flight", "not_stored");
    // The database refuses the look (only this file's tests give appends up, one at a time).
    const failed = await whileLooksRefused(p.db, () => call("POST", "/v1/events", { key: p.key, body: { action: "unknown.fate" }, headers: { "Idempotency-Key": "fate-1" } }));
    expect(failed.status).toBe(500);
    expect(failed.json.error.message).toMatch(/whether they were stored is not known yet; send the request again with the same Idempotency-Key/);
    // It may land yet (nothing gave it up): D1 runs the stopped ledger's batch late, and the retry with the same key
    // gets its first answer, stored once. (With the journal stored, the ledger's next start sends it: commit-journal.test.ts.)
    await p.db.batch(inFlight.map((s) => p.db.prepare(s.sql).bind(...s.params)));
    const retry = await call("POST", "/v1/events", { key: p.key, body: { action: "unknown.fate" }, headers: { "Idempotency-Key": "fate-1" } });
    expect(retry.status).toBe(201);
    expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
    expect(retry.json.data).toMatchObject({ seq: 2, action: "unknown.fate" });
    const { results } = await p.db.prepare("SELECT seq FROM events WHERE project_id = ? ORDER BY seq").bind(p.id).all<{ seq: number }>();
    expect(results.map((r) => r.seq)).toEqual([1, 2]);
  });

  it("answers a commit a full database refused 429 storage_full without looking for it (the look's own write would be refused too)", async () => {
    const p = await createProject();
    await ingest(p.key, { action: "a" });
    // A full database refuses every write, the look's included (only this file's tests give appends up, one at a time).
    await p.db.batch([
      p.db.prepare("CREATE TRIGGER test_full_events BEFORE INSERT ON events WHEN NEW.action = 'while.full' BEGIN SELECT RAISE(ABORT, 'Exceeded maximum DB size'); END"),
      p.db.prepare("CREATE TRIGGER test_full_given_up BEFORE INSERT ON given_up_appends BEGIN SELECT RAISE(ABORT, 'Exceeded maximum DB size'); END"),
    ]);
    let refused;
    try {
      refused = await call("POST", "/v1/events", { key: p.key, body: { action: "while.full" } });
    } finally {
      await p.db.batch([p.db.prepare("DROP TRIGGER test_full_events"), p.db.prepare("DROP TRIGGER test_full_given_up")]);
    }
    expect(refused.status).toBe(429);
    expect(refused.json.error).toMatchObject({ code: "RATE_LIMITED", details: { reason: "storage_full", retry_after: 60 } });
    expect((await ingest(p.key, { action: "after.full" })).json.data).toMatchObject({ seq: 2 });
  });

  it("attack: a row planted past the head with a recomputed hash is not adopted, and verify names it", async () => {
    const p = await createProject();
    const first = await ingest(p.key, { action: "a" });
    // The attacker links and hashes correctly but cannot sign with the real key.
    const planted = await rowAfter(p.id, first.json.data, "1:not-the-real-key", "admin.granted");
    await p.db.batch(insertEventsStatements(p.db, [planted]));
    await reloadHead(p.id);
    expect(await ledger(p.id).anchor()).toMatchObject({ seq: 1, hash: first.json.data.hash });
    const result = (await call("GET", "/v1/events/verify", { key: p.key })).json.data;
    expect(result.ok).toBe(false);
    expect(result.failure).toMatchObject({ event_id: planted.id, reason: "chain_broken" });
  });

  it("attack: rows planted after an unsigned gap in seq are not adopted", async () => {
    const p = await createProject();
    const first = await ingest(p.key, { action: "a" });
    const skipped = await rowAfter(p.id, { seq: first.json.data.seq + 1, hash: first.json.data.hash }, env.SIGNING_KEYS);
    await p.db.batch(insertEventsStatements(p.db, [skipped]));
    await reloadHead(p.id);
    expect((await ledger(p.id).anchor()).seq).toBe(1);
  });
});
