/**
 * Where a project's tree lives: its ledger's own SQLite storage, next to the
 * chain head. Tile entries (tile-builder.ts) go in one table, one row per
 * entry, appended and never changed; the frontier and the build state are
 * small KV values rewritten per group commit. Everything here is synchronous,
 * so the ledger can write the tree and its head in one storage transaction.
 */
import { type FrontierJson, TreeFrontier } from "./merkle.ts";
import type { EntryReader, TileEntry } from "./tile-builder.ts";

/**
 * ready: the tree holds exactly the leaves of seq 1..head and grows with each
 * commit. building: a project that had events before it had a tree; the
 * backfill adds their leaves, unpublished until it reaches the head and its
 * hash. blocked: the backfill found the chain incomplete or altered in D1, so
 * this tree can never be built; `blocked` says where and why.
 */
export type LogStatus = "ready" | "building" | "blocked";

export interface BuildState {
  status: LogStatus;
  /** Event hash (hex) of the last leaf, so the backfill can check the next row links to it. */
  lastHash: string | null;
  blocked?: { seq: number; reason: "missing" | "chain_broken" | "hash_mismatch" | "head_mismatch" };
}

const KEY = { frontier: "log:frontier", build: "log:build" } as const;

export class LogStore {
  constructor(private readonly storage: DurableObjectStorage) {
    storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS log_entries (level INTEGER NOT NULL, idx INTEGER NOT NULL, hash BLOB NOT NULL, PRIMARY KEY (level, idx)) WITHOUT ROWID",
    );
  }

  get kv(): SyncKvStorage {
    return this.storage.kv;
  }

  frontier(): TreeFrontier | null {
    const json = this.storage.kv.get<FrontierJson>(KEY.frontier);
    return json === undefined ? null : TreeFrontier.fromJSON(json);
  }

  build(): BuildState | null {
    return this.storage.kv.get<BuildState>(KEY.build) ?? null;
  }

  setBuild(state: BuildState): void {
    this.storage.kv.put(KEY.build, state);
  }

  /**
   * Appends entries and saves the frontier they lead to (and the build state,
   * when given: a ready log's never changes); call inside the caller's transaction.
   */
  append(entries: readonly TileEntry[], frontier: TreeFrontier, build: BuildState | null): void {
    for (const e of entries) {
      // OR IGNORE: an entry never changes once written, so rewriting one is a no-op, never an error.
      this.storage.sql.exec("INSERT OR IGNORE INTO log_entries (level, idx, hash) VALUES (?, ?, ?)", e.tileLevel, e.index, e.hash);
    }
    this.storage.kv.put(KEY.frontier, frontier.toJSON());
    if (build) this.setBuild(build);
  }

  /** Reads `count` entries of a tile level from `start`; fewer when they do not exist. */
  readEntries(level: number, start: number, count: number): Uint8Array[] {
    const rows = this.storage.sql
      .exec<{ hash: ArrayBuffer }>("SELECT hash FROM log_entries WHERE level = ? AND idx >= ? AND idx < ? ORDER BY idx", level, start, start + count)
      .toArray();
    return rows.map((r) => new Uint8Array(r.hash));
  }

  readonly reader: EntryReader = async (level, start, count) => this.readEntries(level, start, count);
}
