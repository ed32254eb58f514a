/**
 * What a project's ledger (src/durable/project-ledger.do.ts) lends the code
 * that works on its behalf: the group commit, erasure steps, retention, the
 * archive's and the shard move's steps, the log's upkeep and the rollups'
 * backfill. Each of those takes a LedgerHost, plus the few things of its own
 * it needs (named in its own `...Host` type), so the ledger builds this once
 * and the shape is written down once. Declared here, in the lowest layer whose
 * code takes it, so storage, chain, log and reads can all name it.
 */
export interface LedgerHost {
  readonly env: Env;
  readonly projectId: string;
  /** The ledger's own Durable Object storage (key-value and SQL). */
  readonly storage: DurableObjectStorage;
  /** The project's event shard; a shard move switches it, so read it each time. */
  db(): D1Database;
  /** The chain head as the ledger committed it. */
  head(): { seq: number; hash: string | null };
  /** Runs work under the ledger's commit lock: no append, purge, erasure step or archive step interleaves with it. */
  exclusive<T>(work: () => Promise<T>): Promise<T>;
}
