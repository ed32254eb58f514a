/**
 * Where a project's tree lives: its ledger's own SQLite storage, next to the
 * chain head. Tile entries (tile-builder.ts) are kept one row per tile, its
 * hashes concatenated as served: a group commit then costs one or two
 * statements whatever its size (a row per entry cost ~5 us an event), and a
 * tile is one row read. Full tiles never change; the partial ones only grow.
 * The frontier and the build state are small KV values. Writes are
 * synchronous, so the ledger writes the tree and its head in one transaction.
 *
 * The frontier is saved only by a commit that completes a leaf tile, not by
 * every commit: a row written per commit was a third of what a one-event
 * commit wrote here. The leaves since then are all in the newest leaf tile,
 * which is never moved, so ProjectLog appends them to the saved frontier when
 * it starts. The frontier stays made from leaves as they were appended, never
 * from the upper tiles' entries, so verify's root recomputed from the tiles
 * (ProjectLog.anchor) still checks those entries against it.
 *
 * The newest leaf tile's row also keeps its last leaf's data (`last`: the
 * hash of the event it stands for, hex), written by the same statement as its
 * leaves: the chain's head is the tree's size and that hash, so a ledger whose
 * log took a commit's leaves needs no head row of its own for it (a one-event
 * commit then writes one row here, not two: durable/ledger-core.ts).
 *
 * Old full tiles do not stay here (32 bytes an event would fill the ledger's
 * 10 GB at ~300M events): tile-offload.ts moves them to the LOGS bucket, where
 * they are the public copies, and drops their rows. Per level the moved tiles
 * are always a prefix (0 up to the first row left), and each keeps its
 * SHA-256 here: a moved tile is read back from R2 only when it has exactly
 * that digest (movedTile), so the bucket can withhold a tile but never change one.
 */
import { HASH_SIZE, bytesEqual, concatBytes } from "../tlog/encoding.ts";
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

/** Bytes of a full tile: 256 hashes. */
export const FULL_TILE_BYTES = TILE_WIDTH * HASH_SIZE;
/** Moved tiles kept in memory once checked (8 KiB each): a proof reads its leaf's tile up to 8 times. */
const CHECKED_TILES = 64;

/** Where moved tiles are read back from (the LOGS bucket): the object's bytes, unchecked, or null when there is none. */
export type MovedTileSource = (level: number, index: number) => Promise<Uint8Array | null>;

/**
 * A moved tile R2 cannot give back as it was: missing, or not the bytes whose
 * SHA-256 the ledger recorded. Nothing is served or proven from it.
 */
/**
 * What a refused tile's message always holds: an error's class does not cross
 * the ledger's RPC boundary, its message does, so the app's one onError knows
 * it by this and answers ARCHIVE_DAMAGED instead of a 500.
 */
export const TILE_REFUSED = "(moved to the LOGS bucket)";

export class TileRefusedError extends Error {
  constructor(
    readonly level: number,
    readonly index: number,
    why: string,
  ) {
    super(`log tile ${level}/${index} ${TILE_REFUSED} ${why}: refused, neither served nor used in a proof`);
    this.name = "TileRefusedError";
  }
}

export class LogStore {
  /** Per level, how many tiles were moved out (the first index still here), once looked up. */
  private readonly moved = new Map<number, number>();
  /** Moved tiles whose bytes were checked against their digest, by "level/index", oldest first. */
  private readonly checked = new Map<string, Uint8Array>();
  private readonly fetching = new Map<string, Promise<Uint8Array>>();

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly source: MovedTileSource | null = null,
  ) {
    storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS log_tiles (level INTEGER NOT NULL, idx INTEGER NOT NULL, data BLOB NOT NULL, last TEXT, PRIMARY KEY (level, idx)) WITHOUT ROWID",
    );
    // A table older code made has no `last` column: added once, empty, filled by the next append.
    if (!storage.sql.exec<{ name: string }>("PRAGMA table_info(log_tiles)").toArray().some((c) => c.name === "last")) {
      storage.sql.exec("ALTER TABLE log_tiles ADD COLUMN last TEXT");
    }
    // SHA-256 of full tiles, kept once computed (a full tile never changes): what R2 copies are checked against.
    storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS log_tile_digests (level INTEGER NOT NULL, idx INTEGER NOT NULL, sha256 BLOB NOT NULL, PRIMARY KEY (level, idx)) WITHOUT ROWID",
    );
  }

  get kv(): SyncKvStorage {
    return this.storage.kv;
  }

  /**
   * Leaves in the tree: per level, the entries up to the end of its newest
   * tile (a level's newest row is never moved: releaseTiles), in leaves. The
   * level holding the partial leaf tile counts them all; a level above counts
   * the full tiles below it, which is every leaf when none is partial.
   */
  treeSize(): number {
    let size = 0;
    for (const row of this.storage.sql.exec<{ level: number; idx: number; bytes: number }>(
      "SELECT t.level, t.idx, length(t.data) AS bytes FROM log_tiles t JOIN (SELECT level, MAX(idx) AS idx FROM log_tiles GROUP BY level) m " +
        "ON m.level = t.level AND m.idx = t.idx",
    )) {
      size = Math.max(size, (row.idx * TILE_WIDTH + row.bytes / HASH_SIZE) * TILE_WIDTH ** row.level);
    }
    return size;
  }

  /** The frontier as last saved (append), at treeSize() or fewer leaves: null before the first leaf tile was completed. */
  savedFrontier(): TreeFrontier | null {
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
   * The data of the last leaf (hex), as the newest leaf tile's row keeps it;
   * null before the first leaf, or when older code wrote that row.
   */
  lastLeaf(): string | null {
    return this.storage.sql.exec<{ last: string | null }>("SELECT last FROM log_tiles WHERE level = 0 ORDER BY idx DESC LIMIT 1").toArray()[0]?.last ?? null;
  }

  /**
   * Appends entries, and saves the frontier they lead to when they complete a
   * leaf tile (and the build state, when given: a ready log's never changes);
   * `lastLeaf` (hex) goes on the newest leaf tile's row. Call inside the
   * caller's transaction.
   */
  append(entries: readonly TileEntry[], frontier: TreeFrontier, build: BuildState | null, lastLeaf: string | null = null): void {
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
      for (const [i, run] of runs.entries()) {
        const data = concatBytes(...run.hashes);
        // Runs come level by level: the last leaf run is the one no leaf run follows.
        const last = run.level === 0 && runs[i + 1]?.level !== 0 ? lastLeaf : null;
        if (run.offset === 0) {
          this.storage.sql.exec("INSERT INTO log_tiles (level, idx, data, last) VALUES (?, ?, ?, ?)", run.level, run.tile, data, last);
          continue;
        }
        const written = this.storage.sql.exec(
          // || yields text; the cast takes its bytes back as they are (lengths, not NULs, delimit them).
          "UPDATE log_tiles SET data = CAST(data || ? AS BLOB), last = ? WHERE level = ? AND idx = ? AND length(data) = ?",
          data,
          last,
          run.level,
          run.tile,
          run.offset * HASH_SIZE,
        ).rowsWritten;
        if (written === 0) throw new Error(`log tile ${run.level}/${run.tile} does not end at entry ${run.offset}`);
      }
      if (entries.some((e) => e.tileLevel === 0 && e.index % TILE_WIDTH === TILE_WIDTH - 1)) this.storage.kv.put(KEY.frontier, frontier.toJSON());
      if (build) this.setBuild(build);
    });
  }

  /**
   * Reads `count` entries of a tile level from `start`; fewer when they do
   * not exist. Moved tiles come back from R2, each checked against its digest
   * (TileRefusedError when it does not match).
   */
  async readEntries(level: number, start: number, count: number): Promise<Uint8Array[]> {
    if (count <= 0) return [];
    const end = start + count;
    const first = Math.floor(start / TILE_WIDTH);
    const last = Math.floor((end - 1) / TILE_WIDTH);
    const tiles = new Map<number, Uint8Array>();
    for (const row of this.storage.sql.exec<{ idx: number; data: ArrayBuffer }>(
      "SELECT idx, data FROM log_tiles WHERE level = ? AND idx >= ? AND idx <= ? ORDER BY idx",
      level,
      first,
      last,
    )) {
      tiles.set(row.idx, new Uint8Array(row.data));
    }
    // Moved tiles are a prefix of the level: only a read that starts below the rows left needs R2.
    if (!tiles.has(first)) {
      const moved = Math.min(this.movedTiles(level), last + 1);
      const indexes = Array.from({ length: Math.max(0, moved - first) }, (_, k) => first + k);
      (await Promise.all(indexes.map((i) => this.movedTile(level, i)))).forEach((bytes, k) => tiles.set(indexes[k], bytes));
    }
    const out: Uint8Array[] = [];
    for (let idx = first; idx <= last; idx++) {
      const bytes = tiles.get(idx);
      const base = idx * TILE_WIDTH;
      const from = Math.max(start, base);
      // A hole (a missing tile) ends the answer: callers want a prefix of consecutive entries.
      if (!bytes || from !== start + out.length) break;
      const to = Math.min(end, base + bytes.length / HASH_SIZE);
      for (let i = from; i < to; i++) out.push(bytes.subarray((i - base) * HASH_SIZE, (i - base + 1) * HASH_SIZE));
    }
    return out;
  }

  /** How many tiles of `level` were moved out: they are tiles 0 up to the first one still here. */
  movedTiles(level: number): number {
    let n = this.moved.get(level);
    if (n === undefined) {
      n = this.storage.sql.exec<{ first: number | null }>("SELECT MIN(idx) AS first FROM log_tiles WHERE level = ?", level).one().first ?? 0;
      this.moved.set(level, n);
    }
    return n;
  }

  /** The tiles moved out, per level from 0: what verify expects to find in the bucket. */
  movedCounts(): number[] {
    const counts: number[] = [];
    for (const row of this.storage.sql.exec<{ level: number; first: number }>("SELECT level, MIN(idx) AS first FROM log_tiles GROUP BY level ORDER BY level")) {
      counts[row.level] = row.first;
      this.moved.set(row.level, row.first);
    }
    return Array.from(counts, (n) => n ?? 0);
  }

  /** Full tiles of `level` with index in [from, to) still held here, in index order. */
  fullTiles(level: number, from: number, to: number): Array<{ index: number; bytes: Uint8Array }> {
    return this.storage.sql
      .exec<{ idx: number; data: ArrayBuffer }>(
        "SELECT idx, data FROM log_tiles WHERE level = ? AND idx >= ? AND idx < ? AND length(data) = ? ORDER BY idx",
        level,
        from,
        to,
        FULL_TILE_BYTES,
      )
      .toArray()
      .map((row) => ({ index: row.idx, bytes: new Uint8Array(row.data) }));
  }

  /**
   * Drops the rows of tiles [from, to) of `level`. The caller (tile-offload.ts)
   * has seen R2 hold each of them with its recorded digest; everything below
   * `from` must be gone already, so what is moved stays a prefix. Refused
   * (nothing dropped) if a tile has no digest, or no newer row would be left.
   */
  releaseTiles(level: number, from: number, to: number): void {
    this.storage.transactionSync(() => {
      const sql = this.storage.sql;
      const first = sql.exec<{ first: number | null }>("SELECT MIN(idx) AS first FROM log_tiles WHERE level = ?", level).one().first;
      if (first === null || first >= to) return;
      if (first < from) throw new Error(`log tiles ${level}/${first}..${from - 1} were never moved: tiles ${from}..${to - 1} cannot go first`);
      const digests = sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM log_tile_digests WHERE level = ? AND idx >= ? AND idx < ?", level, first, to).one().n;
      if (digests !== to - first) throw new Error(`log tiles ${level}/${first}..${to - 1} lack recorded digests: not moved`);
      const newer = sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM log_tiles WHERE level = ? AND idx >= ?", level, to).one().n;
      if (newer === 0) throw new Error(`log tile ${level}/${to - 1} is the level's newest: not moved`);
      sql.exec("DELETE FROM log_tiles WHERE level = ? AND idx >= ? AND idx < ?", level, first, to);
    });
    this.moved.set(level, Math.max(this.moved.get(level) ?? 0, to));
  }

  /** A moved tile's bytes from R2, only when they have the digest recorded for it; checked ones are kept in memory. */
  private movedTile(level: number, index: number): Promise<Uint8Array> {
    const key = `${level}/${index}`;
    const hit = this.checked.get(key);
    if (hit) {
      this.checked.delete(key);
      this.checked.set(key, hit);
      return Promise.resolve(hit);
    }
    let pending = this.fetching.get(key);
    if (!pending) {
      pending = this.fetchMoved(level, index).finally(() => this.fetching.delete(key));
      this.fetching.set(key, pending);
    }
    return pending;
  }

  private async fetchMoved(level: number, index: number): Promise<Uint8Array> {
    const want = this.tileDigest(level, index);
    if (!want) throw new TileRefusedError(level, index, "has no SHA-256 recorded to check it against");
    if (!this.source) throw new TileRefusedError(level, index, "cannot be read: this store has no bucket");
    const bytes = await this.source(level, index);
    if (bytes === null) throw new TileRefusedError(level, index, "is missing from the bucket");
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
    if (bytes.length !== FULL_TILE_BYTES || !bytesEqual(digest, want)) {
      throw new TileRefusedError(level, index, "is not the tile the ledger recorded: the bucket's object has another SHA-256");
    }
    if (this.checked.size >= CHECKED_TILES) this.checked.delete(this.checked.keys().next().value!);
    this.checked.set(`${level}/${index}`, bytes);
    return bytes;
  }

  tileDigest(level: number, idx: number): Uint8Array | null {
    const row = this.storage.sql.exec<{ sha256: ArrayBuffer }>("SELECT sha256 FROM log_tile_digests WHERE level = ? AND idx = ?", level, idx).toArray()[0];
    return row ? new Uint8Array(row.sha256) : null;
  }

  setTileDigest(level: number, idx: number, sha256: Uint8Array): void {
    this.storage.sql.exec("INSERT OR REPLACE INTO log_tile_digests (level, idx, sha256) VALUES (?, ?, ?)", level, idx, sha256);
  }

  readonly reader: EntryReader = (level, start, count) => this.readEntries(level, start, count);
}
