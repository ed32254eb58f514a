/**
 * Test helpers: a project's ledger that fell behind (its commits held), what
 * waits in its commit queue, what its shard stores, a worker that cannot look
 * for a lost answer, rows sealed as the ledger seals them, and a ledger the
 * runtime stops mid-commit.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import type { ProjectLedger } from "../../src/durable/project-ledger.do";
import type { EventRow } from "../../src/db/schema";
import { piiCommitment, sealRow } from "../../src/sealing/payload";
import { loadKeyring } from "../../src/sealing/signing-keys";

const ledger = (projectId: string) => env.LEDGER.get(env.LEDGER.idFromName(projectId));

/** Holds every commit of the project's ledger until the returned release is called, as a slow database would. */
export async function holdCommits(projectId: string): Promise<() => void> {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  await runInDurableObject(ledger(projectId), async (instance: ProjectLedger) => {
    const self = instance as unknown as { loadHead(): Promise<void>; db: D1Database };
    await self.loadHead();
    const db = self.db;
    self.db = new Proxy(db, {
      get(target, key) {
        if (key === "batch") return async (statements: D1PreparedStatement[]) => (await gate, target.batch(statements));
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  });
  return release;
}

/** Events queued or committing in the project's ledger. */
export function queuedEvents(projectId: string): Promise<number> {
  return runInDurableObject(ledger(projectId), (instance: ProjectLedger) => (instance as unknown as { commits: { load(): { events: number } } }).commits.load().events);
}

/** The project's stored events as [seq, action], in chain order. */
export async function storedActions(p: { id: string; db: D1Database }): Promise<Array<[number, string]>> {
  const { results } = await p.db.prepare("SELECT seq, action FROM events WHERE project_id = ? ORDER BY seq").bind(p.id).all<{ seq: number; action: string }>();
  return results.map((r) => [r.seq, r.action]);
}

/** Runs `work` while the shard refuses every append's give-up, as when a worker's look cannot reach the database. */
export async function whileLooksRefused<T>(db: D1Database, work: () => Promise<T>): Promise<T> {
  await db.prepare("CREATE TRIGGER test_look_refused BEFORE INSERT ON given_up_appends BEGIN SELECT RAISE(ABORT, 'test: the database is unreachable'); END").run();
  try {
    return await work();
  } finally {
    await db.prepare("DROP TRIGGER test_look_refused").run();
  }
}

/** workerd's statement keeps its SQL and bound values as `statement` and `params`. */
export const sqlOf = (s: D1PreparedStatement) => s as unknown as { statement: string; params: unknown[] };

/**
 * Puts `batch` in front of the ledger's D1 batches (its shard's `real`
 * database, and the object's state) until it calls `restore`.
 */
export async function interceptBatches(
  projectId: string,
  batch: (statements: D1PreparedStatement[], real: D1Database, restore: () => void, state: DurableObjectState) => Promise<unknown>,
) {
  await runInDurableObject(ledger(projectId), (instance: ProjectLedger, state: DurableObjectState) => {
    const host = instance as unknown as { db: D1Database };
    const real = host.db;
    host.db = {
      prepare: (sql: string) => real.prepare(sql),
      batch: (statements: D1PreparedStatement[]) => batch(statements, real, () => (host.db = real), state),
    } as unknown as D1Database;
  });
}

/** A row as the ledger would seal it after `prev`, signed with `keys`. */
export async function rowAfter(projectId: string, prev: { seq: number; hash: string }, keys: string, action = "landed.late"): Promise<EventRow> {
  const pii = { actor_id: null, actor_name: null, actor_email: null, ip_address: null, user_agent: null };
  const salt = "00".repeat(16);
  const now = new Date().toISOString();
  return sealRow(
    {
      row_id: null as unknown as number, id: crypto.randomUUID(), project_id: projectId, seq: prev.seq + 1, action,
      organization: null, actor_type: null, ...pii, targets: "[]", metadata: "{}", occurred_at: now, received_at: now,
      pii_salt: salt, pii_commitment: await piiCommitment(salt, pii), prev_hash: prev.hash, anonymized_at: null,
      changes: null, schema_version: null, schema_valid: null,
    },
    await loadKeyring(keys),
  );
}

/**
 * Makes the ledger's next D1 batch stop the runtime (the object is reset): after the batch committed, instead
 * of it, or with it in flight (sent, not yet run). In flight, its statements (SQL and values) are returned for
 * the test to run when it chooses, as D1 would run a batch from a ledger that is gone.
 */
export async function stopOnNextBatch(projectId: string, when: "after_commit" | "before_commit" | "in_flight", journal: "stored" | "not_stored" = "stored") {
  const inFlight: Array<{ sql: string; params: unknown[] }> = [];
  // Not stored: the commit's journal write is lost with the stopped instance (or the instance ran code from before
  // the journal, during a deploy), so no later start sends its batch again (chain/commit-journal.ts).
  if (journal === "not_stored") await loseNextJournal(projectId);
  await interceptBatches(projectId, async (statements, real, restore, state) => {
    restore();
    if (when === "after_commit") await real.batch(statements);
    if (when === "in_flight") inFlight.push(...statements.map(sqlOf).map((s) => ({ sql: s.statement, params: s.params })));
    state.abort(`test: the runtime stops the ledger ${when === "after_commit" ? "after its commit" : when === "in_flight" ? "with its batch in flight" : "before its commit"}`);
    throw new Error("unreachable: the object was reset");
  });
  return inFlight;
}

/** The ledger's next journal write never reaches its storage. */
export async function loseNextJournal(projectId: string) {
  await runInDurableObject(ledger(projectId), (instance: ProjectLedger) => {
    const journal = (instance as unknown as { journal: { write: (entry: unknown) => void } }).journal;
    const write = journal.write;
    journal.write = () => {
      journal.write = write;
    };
  });
}
