/**
 * Where a project's tree lives: its ledger's own SQLite storage, next to the
 * chain head. Tile entries (tile-builder.ts) are kept one row per tile, its
 * hashes concatenated as served: a group commit then costs one or two
 * statements whatever its size (a row per entry cost ~5 us an event), and a
 * tile is one row read. Full tiles never change; the partial ones only grow.
 * The frontier and the build state are small KV values. Everything here is
 * synchronous, so the ledger writes the tree and its head in one transaction.
 */
import { HASH_SIZE, concatBytes } from "../tlog/encoding.ts";
import { type FrontierJson, TreeFrontier } from "../tlog/merkle.ts";
import type { EntryReader, TileEntry } from "../tlog/tile-builder.ts";
import { TILE_WIDTH } from "../tlog/tiles.ts";

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
      "CREATE TABLE IF NOT EXISTS log_tiles (level INTEGER NOT NULL, idx INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (level, idx)) WITHOUT ROWID",
    );
    // SHA-256 of full tiles, kept once computed (a full tile never changes): what R2 copies are checked against.
    storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS log_tile_digests (level INTEGER NOT NULL, idx INTEGER NOT NULL, sha256 BLOB NOT NULL, PRIMARY KEY (level, idx)) WITHOUT ROWID",
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
    // Entries come level by level in index order (appendLeaves): runs of one tile are adjacent.
    const runs: Array<{ level: number; tile: number; offset: number; hashes: Uint8Array[] }> = [];
    for (const e of entries) {
      const tile = Math.floor(e.index / TILE_WIDTH);
      const run = runs[runs.length - 1];
      if (run && run.level === e.tileLevel && run.tile === tile && run.offset + run.hashes.length === e.index % TILE_WIDTH) run.hashes.push(e.hash);
      else runs.push({ level: e.tileLevel, tile, offset: e.index % TILE_WIDTH, hashes: [e.hash] });
    }
    // One transaction: a run that does not continue its tile exactly throws, and nothing of it is kept.
    this.storage.transactionSync(() => {
      for (const run of runs) {
        const data = concatBytes(...run.hashes);
        if (run.offset === 0) {
          this.storage.sql.exec("INSERT INTO log_tiles (level, idx, data) VALUES (?, ?, ?)", run.level, run.tile, data);
          continue;
        }
        const written = this.storage.sql.exec(
          // || yields text; the cast takes its bytes back as they are (lengths, not NULs, delimit them).
          "UPDATE log_tiles SET data = CAST(data || ? AS BLOB) WHERE level = ? AND idx = ? AND length(data) = ?",
          data,
          run.level,
          run.tile,
          run.offset * HASH_SIZE,
        ).rowsWritten;
        if (written === 0) throw new Error(`log tile ${run.level}/${run.tile} does not end at entry ${run.offset}`);
      }
      this.storage.kv.put(KEY.frontier, frontier.toJSON());
      if (build) this.setBuild(build);
    });
  }

  /** Reads `count` entries of a tile level from `start`; fewer when they do not exist. */
  readEntries(level: number, start: number, count: number): Uint8Array[] {
    if (count <= 0) return [];
    const end = start + count;
    const rows = this.storage.sql
      .exec<{ idx: number; data: ArrayBuffer }>(
        "SELECT idx, data FROM log_tiles WHERE level = ? AND idx >= ? AND idx <= ? ORDER BY idx",
        level,
        Math.floor(start / TILE_WIDTH),
        Math.floor((end - 1) / TILE_WIDTH),
      )
      .toArray();
    const out: Uint8Array[] = [];
    for (const row of rows) {
      const bytes = new Uint8Array(row.data);
      const first = row.idx * TILE_WIDTH;
      const from = Math.max(start, first);
      const to = Math.min(end, first + bytes.length / HASH_SIZE);
      // A hole (a missing tile) ends the answer: callers want a prefix of consecutive entries.
      if (from !== start + out.length) break;
      for (let i = from; i < to; i++) out.push(bytes.subarray((i - first) * HASH_SIZE, (i - first + 1) * HASH_SIZE));
    }
    return out;
  }

  tileDigest(level: number, idx: number): Uint8Array | null {
    const row = this.storage.sql.exec<{ sha256: ArrayBuffer }>("SELECT sha256 FROM log_tile_digests WHERE level = ? AND idx = ?", level, idx).toArray()[0];
    return row ? new Uint8Array(row.sha256) : null;
  }

  setTileDigest(level: number, idx: number, sha256: Uint8Array): void {
    this.storage.sql.exec("INSERT OR REPLACE INTO log_tile_digests (level, idx, sha256) VALUES (?, ?, ?)", level, idx, sha256);
  }

  readonly reader: EntryReader = async (level, start, count) => this.readEntries(level, start, count);
}
