import { env } from "cloudflare:workers";
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { CommitJournal, JournalEntry } from "../../src/chain/commit-journal";
import type { ProjectLedger } from "../../src/durable/project-ledger.do";
import type { EventRow } from "../../src/db/schema";
import { call, createProject, ingest } from "../helpers";
import { eraseApplied } from "./erasure-helpers";
import { rowAfter, stopOnNextBatch, storedActions, whileLooksRefused } from "./commit-gate";

const ledger = (projectId: string) => env.LEDGER.get(env.LEDGER.idFromName(projectId));

/** What the project's ledger keeps in its journal now: its parts' bodies, joined. */
function journalText(projectId: string): Promise<string> {
  return runInDurableObject(ledger(projectId), (_: ProjectLedger, state: DurableObjectState) =>
    state.storage.sql.exec<{ body: string }>("SELECT body FROM commit_journal ORDER BY part").toArray().map((r) => r.body).join(""),
  );
}

/**
 * Journals a commit of `actions` after the ledger's head, as the group commit
 * does before it sends the D1 batch, then stops the ledger there: the batch
 * never reached D1. `token` names the append as a worker would.
 */
async function journalThenStop(projectId: string, actions: string[], token: string | null = null): Promise<EventRow[]> {
  const head = (await ledger(projectId).anchor()) as { seq: number; hash: string };
  const rows: EventRow[] = [];
  for (const action of actions) rows.push(await rowAfter(projectId, rows.at(-1) ?? head, env.SIGNING_KEYS, action));
  const named = token === null ? [] : [{ token, first: rows[0].seq, last: rows[rows.length - 1].seq }];
  const entry: JournalEntry = { after: { seq: head.seq, hash: head.hash }, rows, named, keyed: [] };
  await runInDurableObject(ledger(projectId), (instance: ProjectLedger) => (instance as unknown as { journal: CommitJournal }).journal.write(entry));
  await evictDurableObject(ledger(projectId));
  return rows;
}

const journalParts = (projectId: string) =>
  runInDurableObject(ledger(projectId), (_: ProjectLedger, state: DurableObjectState) => state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM commit_journal").one().n);

describe("the commit journal (issue 38, item 3, step 1)", () => {
  it("stores a commit journaled before its ledger stopped, at the ledger's next start, once, and the chain goes on from it", async () => {
    const p = await createProject();
    await ingest(p.key, { action: "a" });
    const journaled = await journalThenStop(p.id, ["journaled.1", "journaled.2"]);
    // The next request starts the ledger again, which sends the journaled batch before it takes anything else.
    const next = await ingest(p.key, { action: "b" });
    expect(next.json.data).toMatchObject({ seq: 4, prev_hash: journaled[1].hash });
    expect(await storedActions(p)).toEqual([[1, "a"], [2, "journaled.1"], [3, "journaled.2"], [4, "b"]]);
    expect((await call("GET", `/v1/events/${journaled[0].id}`, { key: p.key })).json.data).toMatchObject({ seq: 2, hash: journaled[0].hash });
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 4 });
    // Counted in the project's activity once, as every commit is.
    const actions = (await call("GET", "/v1/actions", { key: p.key })).json.data as Array<{ action: string; count: number }>;
    expect(actions.find((a) => a.action === "journaled.1")?.count).toBe(1);
    // Done now: a later start does not send it again.
    await evictDurableObject(ledger(p.id));
    expect((await ingest(p.key, { action: "c" })).json.data).toMatchObject({ seq: 5 });
    expect((await storedActions(p)).length).toBe(5);
  });

  it("stores a commit whose ledger stopped with its batch in flight, when its worker could not look for it, and the retry with its key gets it", async () => {
    const p = await createProject();
    await ingest(p.key, { action: "a" });
    await stopOnNextBatch(p.id, "before_commit");
    // The worker cannot look (the database refuses its look), so it says it does not know, and gives nothing up.
    const failed = await whileLooksRefused(p.db, () => call("POST", "/v1/events", { key: p.key, body: { action: "in.flight" }, headers: { "Idempotency-Key": "journal-1" } }));
    expect(failed.status).toBe(500);
    expect(failed.json.error.message).toMatch(/not known yet; send the request again with the same Idempotency-Key/);
    // The retry starts the ledger, which stores the journaled commit first; the key then answers with it, stored once.
    const retry = await call("POST", "/v1/events", { key: p.key, body: { action: "in.flight" }, headers: { "Idempotency-Key": "journal-1" } });
    expect(retry.status).toBe(201);
    expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
    expect(retry.json.data).toMatchObject({ seq: 2, action: "in.flight" });
    expect(await storedActions(p)).toEqual([[1, "a"], [2, "in.flight"]]);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 2 });
  });

  it("forgets a journaled commit whose worker gave its append up before the ledger started again: no batch of it lands", async () => {
    const p = await createProject();
    await ingest(p.key, { action: "a" });
    const token = crypto.randomUUID();
    await journalThenStop(p.id, ["given.up"], token);
    // The worker's look found nothing and gave the append up (chain/landed-appends.ts), before the ledger's start.
    await p.db.prepare("INSERT INTO given_up_appends (token, given_up_at) VALUES (?, ?)").bind(token, new Date().toISOString()).run();
    expect((await ingest(p.key, { action: "b" })).json.data).toMatchObject({ seq: 2, action: "b" });
    expect(await storedActions(p)).toEqual([[1, "a"], [2, "b"]]);
    expect(await journalText(p.id)).not.toContain("given.up");
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 2 });
  });

  it("starts with the head it has when D1 cannot take the journaled commit, and stores the commit at a later start", async () => {
    const p = await createProject();
    const first = await ingest(p.key, { action: "a" });
    await p.db.prepare("CREATE TRIGGER test_journal_refused BEFORE INSERT ON events WHEN NEW.action = 'waits.for.d1' BEGIN SELECT RAISE(ABORT, 'test: the database is unreachable'); END").run();
    let head;
    try {
      await journalThenStop(p.id, ["waits.for.d1"]);
      // The ledger starts and answers (reads, verify) with the head it has.
      head = await ledger(p.id).anchor();
      expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 1 });
    } finally {
      await p.db.prepare("DROP TRIGGER test_journal_refused").run();
    }
    expect(head).toMatchObject({ seq: 1, hash: first.json.data.hash });
    await evictDurableObject(ledger(p.id));
    expect((await ingest(p.key, { action: "b" })).json.data).toMatchObject({ seq: 3 });
    expect(await storedActions(p)).toEqual([[1, "a"], [2, "waits.for.d1"], [3, "b"]]);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 3 });
  });

  it("never sends again a commit it answered as not stored (a full database refused it, and nobody looked)", async () => {
    const p = await createProject();
    await ingest(p.key, { action: "a" });
    await p.db.prepare("CREATE TRIGGER test_journal_full BEFORE INSERT ON events WHEN NEW.action = 'while.full' BEGIN SELECT RAISE(ABORT, 'Exceeded maximum DB size'); END").run();
    let refused;
    try {
      refused = await call("POST", "/v1/events", { key: p.key, body: { action: "while.full" } });
    } finally {
      await p.db.prepare("DROP TRIGGER test_journal_full").run();
    }
    expect(refused.status).toBe(429);
    expect(refused.json.error.details).toMatchObject({ reason: "storage_full" });
    // The client was told nothing was stored: a start must not store it behind its back.
    await evictDurableObject(ledger(p.id));
    expect((await ingest(p.key, { action: "after.full" })).json.data).toMatchObject({ seq: 2, action: "after.full" });
    expect(await storedActions(p)).toEqual([[1, "a"], [2, "after.full"]]);
  });

  it("keeps one commit, the newest, and drops its copy of an actor's personal data when an erasure is accepted", async () => {
    const p = await createProject();
    await ingest(p.key, { action: "first", actor: { id: "u_other" } });
    await ingest(p.key, { action: "doc.read", actor: { id: "u_eve", email: "eve@example.com" } });
    expect(await journalText(p.id)).toContain("eve@example.com");
    expect(await journalText(p.id)).not.toContain("u_other");
    expect(await journalParts(p.id)).toBe(1);
    await eraseApplied(p.key, "/v1/actors/u_eve");
    expect(await journalText(p.id)).not.toContain("eve@example.com");
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true });
  });

  it("keeps a commit larger than a row in parts, sends it again whole, and a smaller commit after it leaves one part", async () => {
    const p = await createProject();
    await ingest(p.key, { action: "a" });
    await stopOnNextBatch(p.id, "before_commit");
    // 100 events of about 7 KB of metadata each: their journal is over 700,000 characters, more than a part holds.
    const events = Array.from({ length: 100 }, (_, i) => ({ action: "large.read", metadata: { i, note: "x".repeat(7000) } }));
    const stored = await call("POST", "/v1/events/batch", { key: p.key, body: { events } });
    expect(stored.status).toBe(201);
    expect(stored.json.data.map((e: { seq: number }) => e.seq)).toEqual(Array.from({ length: 100 }, (_, i) => i + 2));
    expect(await journalParts(p.id)).toBeGreaterThan(1);
    expect((await storedActions(p)).length).toBe(101);
    expect((await call("GET", `/v1/events/${stored.json.data[99].id}`, { key: p.key })).json.data).toEqual(stored.json.data[99]);
    expect((await ingest(p.key, { action: "small" })).json.data).toMatchObject({ seq: 102 });
    expect(await journalParts(p.id)).toBe(1);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 102 });
  });
});
