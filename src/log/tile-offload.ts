/**
 * Moves old full tiles out of the ledger's storage into the LOGS bucket, from
 * the ledger's alarm (log-upkeep.ts), a bounded batch at a time. A full tile
 * never changes, so once R2 holds it the ledger needs only its SHA-256 (32
 * bytes per 256 leaves instead of 8 KiB) to read it back safely (log-store.ts
 * checks every moved tile it reads against that digest). The object is the
 * public copy the tiles route serves: same key, same bytes, same checksum.
 *
 * Per tile, in this order: the digest recorded (or checked against the one
 * recorded), the object written with it unless R2 already holds it, the
 * object read back and hashed; only then, for the run of tiles that all came
 * back right, the rows dropped, in one transaction. A run cut short anywhere
 * leaves rows that the next run finds and finishes; no step is harmful to
 * repeat. The newest KEEP_FULL_TILES full tiles of each level stay, so
 * appends (which only touch partial tiles), checkpoints and proofs about
 * recent sizes never wait on R2.
 */
import { bytesEqual } from "../tlog/encoding.ts";
import { TILE_WIDTH, levelEntries, tilePath } from "../tlog/tiles.ts";
import { tileObjectKey } from "./log-directory.ts";
import type { LogStore } from "./log-store.ts";
import { placeCopy, sha256 } from "./published-tiles.ts";

/** Full tiles per level the ledger keeps however old: proofs about recent tree sizes read only these. */
export const KEEP_FULL_TILES = 4;
/** Tiles moved per alarm: three R2 operations each, far under the 10,000 subrequests of an invocation. */
export const OFFLOAD_BATCH = 128;
/** R2 operations in flight at once. */
const PARALLEL = 8;

/** The part of ProjectLog the move needs. */
export interface OffloadSource {
  readonly publishedSize: number;
  readonly store: LogStore;
  logId(): Promise<string>;
}

export interface OffloadOptions {
  /** Full tiles kept per level; at least 1 in production (tests use 0 to move all they can). */
  keep?: number;
  /** Most tiles moved by this call. */
  limit?: number;
}

/** Per level, the tiles old enough to move that are still here: [from, to). Only the published tree's: R2 must never hold a tile it does not. */
export function tilesToMove(log: Pick<OffloadSource, "publishedSize" | "store">, keep = KEEP_FULL_TILES): Array<{ level: number; from: number; to: number }> {
  const out: Array<{ level: number; from: number; to: number }> = [];
  for (let level = 0; levelEntries(level, log.publishedSize) >= TILE_WIDTH; level++) {
    const to = Math.floor(levelEntries(level, log.publishedSize) / TILE_WIDTH) - keep;
    const from = log.store.movedTiles(level);
    if (to > from) out.push({ level, from, to });
  }
  return out;
}

/** How many tiles are waiting to move. */
export function tilesWaiting(log: Pick<OffloadSource, "publishedSize" | "store">, keep = KEEP_FULL_TILES): number {
  return tilesToMove(log, keep).reduce((n, r) => n + r.to - r.from, 0);
}

/**
 * One batch: moves up to `limit` old full tiles, oldest first per level, and
 * returns how many moved and how many still wait. A tile R2 does not give
 * back exactly ends its level's run there (the rows stay; the next run tries
 * again); an R2 error ends the batch the same way, after dropping the rows of
 * the tiles confirmed before it.
 */
export async function offloadTiles(log: OffloadSource, bucket: R2Bucket, options: OffloadOptions = {}): Promise<{ moved: number; waiting: number }> {
  const keep = options.keep ?? KEEP_FULL_TILES;
  let budget = options.limit ?? OFFLOAD_BATCH;
  let moved = 0;
  const plan = tilesToMove(log, keep);
  if (plan.length === 0) return { moved, waiting: 0 };
  const logId = await log.logId();
  for (const { level, from, to } of plan) {
    if (budget <= 0) break;
    const tiles = log.store.fullTiles(level, from, Math.min(to, from + budget));
    let confirmed = from;
    let failure: unknown = null;
    for (let i = 0; i < tiles.length && failure === null; i += PARALLEL) {
      const group = tiles.slice(i, i + PARALLEL);
      const placed = await Promise.allSettled(group.map((t) => place(log.store, bucket, logId, level, t.index, t.bytes)));
      for (const [k, result] of placed.entries()) {
        if (result.status === "rejected") {
          failure = result.reason;
          break;
        }
        // Only an unbroken run from `from` may go: what is moved stays a prefix of the level.
        if (group[k].index !== confirmed) {
          failure = new Error(`log tile ${level}/${confirmed} is not here as a full tile`);
          break;
        }
        if (!result.value) {
          failure = new Error(`log tile ${level}/${confirmed}: the LOGS bucket did not give back the bytes written`);
          break;
        }
        confirmed++;
      }
    }
    if (confirmed > from) log.store.releaseTiles(level, from, confirmed);
    moved += confirmed - from;
    budget -= confirmed - from;
    if (failure !== null) {
      console.error(`log ${logId}: moving tiles to R2 stopped at ${level}/${confirmed}; the next run retries`, failure);
      break;
    }
  }
  return { moved, waiting: tilesWaiting(log, keep) };
}

/** Records the tile's digest (a recorded one must match its bytes), then has R2 hold exactly those bytes. */
async function place(store: LogStore, bucket: R2Bucket, logId: string, level: number, index: number, bytes: Uint8Array): Promise<boolean> {
  const digest = await sha256(bytes);
  const recorded = store.tileDigest(level, index);
  if (recorded && !bytesEqual(recorded, digest)) throw new Error(`log tile ${level}/${index}: its bytes here no longer have the SHA-256 recorded for them; not moved`);
  if (!recorded) store.setTileDigest(level, index, digest);
  return placeCopy(bucket, tileObjectKey(logId, tilePath(level, index)), bytes, digest);
}
