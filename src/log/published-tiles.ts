/**
 * The public copies of full tiles: objects in the LOGS bucket that the tiles
 * route writes the first time it serves a full tile, so later reads need not
 * wake the ledger, and that the ledger writes itself when it moves an old
 * full tile out of its storage (tile-offload.ts): the moved tile is the public
 * copy. Anyone who can write the bucket can write there too, so nothing in it
 * is trusted: the route serves a copy only when its SHA-256 is the digest of
 * the ledger's own tile (learnt from the ledger, once per isolate), the
 * ledger reads a moved tile back only with the digest it recorded, and
 * verify, through the ledger's anchor, checks every full-tile object under
 * the log's prefix, so one the ledger did not give (another tile, or a tile
 * the tree does not have yet) fails it, as does a moved tile gone missing.
 */
import { TtlCache } from "../lib/ttl-cache";
import { bytesEqual } from "../tlog/encoding.ts";
import { tileObjectKey } from "./log-directory.ts";
import type { LogStore } from "./log-store.ts";
import { TILE_WIDTH, type TileId, parseTilePath, tileWidth } from "../tlog/tiles.ts";

export async function sha256(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

/** The part of ProjectLog a digest needs. */
interface TileSource {
  readonly publishedSize: number;
  readonly store: LogStore;
  tile(level: number, index: number, width: number): Promise<Uint8Array | null>;
}

/** SHA-256 of a full tile of the published tree, null when it has none; kept in the ledger's storage once computed. */
export async function fullTileDigest(log: TileSource, { level, index }: Pick<TileId, "level" | "index">): Promise<Uint8Array | null> {
  if (tileWidth(level, index, log.publishedSize) < TILE_WIDTH) return null;
  const kept = log.store.tileDigest(level, index);
  if (kept) return kept;
  const bytes = await log.tile(level, index, TILE_WIDTH);
  if (!bytes) return null;
  const digest = await sha256(bytes);
  log.store.setTileDigest(level, index, digest);
  return digest;
}

/**
 * Digests of full tiles the ledger served, by object key. A log id names one
 * ledger for good and a full tile never changes, so an entry never goes stale.
 */
const confirmed = new TtlCache<Uint8Array>(24 * 60 * 60 * 1000, 20_000);

/** The R2 copy of a full tile, when the ledger's digest of it is known here and the copy has it; else null (ask the ledger). */
export async function checkedCopy(bucket: R2Bucket, key: string): Promise<Uint8Array | null> {
  const want = confirmed.get(key);
  if (!want) return null;
  const object = await bucket.get(key);
  if (!object) return null;
  const bytes = new Uint8Array(await object.arrayBuffer());
  return bytesEqual(await sha256(bytes), want) ? bytes : null;
}

/**
 * Records the ledger's bytes of a full tile and makes the R2 copy hold them:
 * written when missing or different (a planted object is replaced), with its
 * SHA-256 given so R2 checks it and verify can compare without reading it.
 */
export async function keepCopy(bucket: R2Bucket, key: string, bytes: Uint8Array): Promise<void> {
  const digest = await sha256(bytes);
  confirmed.set(key, digest);
  const head = await bucket.head(key);
  if (head?.checksums.sha256 && bytesEqual(new Uint8Array(head.checksums.sha256), digest)) return;
  await bucket.put(key, bytes, { sha256: digest });
}

/**
 * Makes the object at `key` hold `bytes` (whose SHA-256 is `digest`) and
 * reads it back: true only when R2 then gives exactly those bytes, the
 * condition for the ledger to drop its own row of the tile. A copy already
 * there (the route's, or a run cut short) is not written again.
 */
export async function placeCopy(bucket: R2Bucket, key: string, bytes: Uint8Array, digest: Uint8Array): Promise<boolean> {
  const head = await bucket.head(key);
  const listed = head?.checksums.sha256;
  if (!(listed && head.size === bytes.length && bytesEqual(new Uint8Array(listed), digest))) await bucket.put(key, bytes, { sha256: digest });
  const stored = await bucket.get(key);
  return stored !== null && bytesEqual(await sha256(new Uint8Array(await stored.arrayBuffer())), digest);
}

/**
 * Whether every full-tile object under the log's prefix holds exactly the
 * ledger's tile. `digestOf` gives the SHA-256 of the ledger's full tile, or
 * null when the published tree does not have it. Other keys are never served
 * and are left alone. A listing is enough for copies the route wrote (R2
 * keeps the SHA-256 it was given); any other object is read and hashed.
 * `moved[L]`: tiles 0 up to it of level L left the ledger for the bucket, so
 * each of them must be there too.
 */
export async function copiesMatch(
  bucket: R2Bucket,
  logId: string,
  digestOf: (tile: TileId) => Promise<Uint8Array | null>,
  moved: readonly number[] = [],
): Promise<boolean> {
  const prefix = tileObjectKey(logId, "");
  const found = moved.map(() => 0);
  let cursor: string | undefined;
  do {
    const page = await bucket.list({ prefix, cursor });
    for (const object of page.objects) {
      const tile = parseTilePath(object.key.slice(prefix.length));
      if (tile === null || tile.width !== TILE_WIDTH) continue;
      const want = await digestOf(tile);
      if (want === null) return false;
      const listed = object.checksums.sha256;
      const has = listed ? bytesEqual(new Uint8Array(listed), want) : await objectHas(bucket, object.key, want);
      if (has === false) return false;
      // One key per tile (parseTilePath takes only the canonical path), so counting finds any missing.
      if (has && tile.index < (moved[tile.level] ?? 0)) found[tile.level]++;
    }
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor !== undefined);
  return moved.every((n, level) => found[level] === n);
}

/**
 * Reads an object R2 keeps no SHA-256 for (one written without it); a copy
 * that matches gets one, so later checks only list. null: deleted since the
 * listing, nothing left to serve (a moved tile's absence is still counted).
 */
async function objectHas(bucket: R2Bucket, key: string, want: Uint8Array): Promise<boolean | null> {
  const object = await bucket.get(key);
  if (!object) return null;
  const bytes = new Uint8Array(await object.arrayBuffer());
  if (!bytesEqual(await sha256(bytes), want)) return false;
  await bucket.put(key, bytes, { sha256: want });
  return true;
}
