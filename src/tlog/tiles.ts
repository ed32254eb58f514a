/**
 * C2SP tlog-tiles (c2sp.org/tlog-tiles): the tree served as static "tiles"
 * of height 8. The tile at level L, index N holds up to 256 consecutive
 * hashes of tree level 8L: entry i is the node (8L, N * 256 + i), i.e.
 * MTH(D[(N * 256 + i) * 256^L : (N * 256 + i + 1) * 256^L]). Level 0 tiles
 * hold leaf hashes; each higher entry is the root of a full tile below.
 */
import { HASH_SIZE, LogFormatError, isCount } from "./encoding.ts";

export const TILE_HEIGHT = 8;
export const TILE_WIDTH = 256;
/** The spec allows levels 0 to 63; trees that fit a JS number use 0 to 6. */
export const MAX_TILE_LEVEL = 63;

export interface TileId {
  level: number;
  index: number;
  /** Number of hashes, 1 to 256; 256 is a full (immutable) tile. */
  width: number;
}

/** Where one perfect node's hash comes from: `count` consecutive entries of a tile. */
export interface TileSlice {
  tile: TileId;
  offset: number;
  count: number;
}

/** Index N in three-digit groups, all but the last prefixed with x: 1234067 -> x001/x234/067. */
export function encodeTileIndex(index: number): string {
  if (!isCount(index)) throw new RangeError("tile index must be a non-negative safe integer");
  const groups: string[] = [];
  let n = index;
  do {
    groups.unshift(String(n % 1000).padStart(3, "0"));
    n = Math.floor(n / 1000);
  } while (n > 0);
  return groups.map((g, i) => (i < groups.length - 1 ? `x${g}` : g)).join("/");
}

/** `tile/<L>/<N>[.p/<W>]`, the path under the log prefix; full tiles have no suffix. */
export function tilePath(level: number, index: number, width: number = TILE_WIDTH): string {
  if (!Number.isInteger(level) || level < 0 || level > MAX_TILE_LEVEL) throw new RangeError("tile level must be 0..63");
  if (!Number.isInteger(width) || width < 1 || width > TILE_WIDTH) throw new RangeError("tile width must be 1..256");
  const suffix = width === TILE_WIDTH ? "" : `.p/${width}`;
  return `tile/${level}/${encodeTileIndex(index)}${suffix}`;
}

const TILE_PATH = /^tile\/(0|[1-9][0-9]?)\/((?:x[0-9]{3}\/)*[0-9]{3})(?:\.p\/([1-9][0-9]{0,2}))?$/;

/**
 * Parses exactly what tilePath writes (including the `tile/` prefix) and
 * returns null for anything else. Leading zero groups (`x000/001`), levels
 * or widths with leading zeros, widths of 0 or 256+, and indexes beyond JS
 * integer precision all fail: each tile must have a single URL.
 */
export function parseTilePath(path: string): TileId | null {
  const m = TILE_PATH.exec(path);
  if (!m) return null;
  const level = Number(m[1]);
  const index = Number(m[2].replaceAll("x", "").replaceAll("/", ""));
  const width = m[3] === undefined ? TILE_WIDTH : Number(m[3]);
  if (level > MAX_TILE_LEVEL || width > TILE_WIDTH || !isCount(index)) return null;
  if (tilePath(level, index, width) !== path) return null;
  return { level, index, width };
}

/** Number of complete level-8L nodes in a tree of `treeSize` leaves. */
export function levelEntries(level: number, treeSize: number): number {
  return Math.floor(treeSize / TILE_WIDTH ** level);
}

/** Width of tile (level, index) in a tree of `treeSize`; 0 if it has no entries yet. */
export function tileWidth(level: number, index: number, treeSize: number): number {
  return Math.max(0, Math.min(TILE_WIDTH, levelEntries(level, treeSize) - index * TILE_WIDTH));
}

/** The partial tiles of a tree, lowest level first (a tree of 256 has one: level 1, width 1). */
export function partialTiles(treeSize: number): TileId[] {
  const out: TileId[] = [];
  for (let level = 0; levelEntries(level, treeSize) > 0; level++) {
    const width = levelEntries(level, treeSize) % TILE_WIDTH;
    if (width > 0) out.push({ level, index: Math.floor(levelEntries(level, treeSize) / TILE_WIDTH), width });
  }
  return out;
}

/**
 * Tiles a tree of `newSize` serves that one of `oldSize` did not serve in the
 * same form: full tiles completed in between, and the new partial tiles.
 * With oldSize 0 this lists every tile of the tree.
 */
export function newTiles(oldSize: number, newSize: number): TileId[] {
  if (!isCount(oldSize) || !isCount(newSize) || oldSize > newSize) throw new RangeError("oldSize must not exceed newSize");
  const out: TileId[] = [];
  for (let level = 0; levelEntries(level, newSize) > 0; level++) {
    const last = Math.ceil(levelEntries(level, newSize) / TILE_WIDTH);
    for (let index = Math.floor(levelEntries(level, oldSize) / TILE_WIDTH); index < last; index++) {
      const width = tileWidth(level, index, newSize);
      if (width !== tileWidth(level, index, oldSize)) out.push({ level, index, width });
    }
  }
  return out;
}

/**
 * The tile entries that make up node (level, index) when reading a tree of
 * `treeSize` from tiles. A node at level 8T + r is the root of 2^r entries of
 * a level-T tile, so nodes at multiples of 8 come straight from one entry of
 * a higher tile instead of hashing a whole tile below.
 */
export function tileSliceForNode(level: number, index: number, treeSize: number): TileSlice {
  const tileLevel = Math.floor(level / TILE_HEIGHT);
  const count = 2 ** (level % TILE_HEIGHT);
  const first = index * count;
  const tileIndex = Math.floor(first / TILE_WIDTH);
  const offset = first % TILE_WIDTH;
  const width = tileWidth(tileLevel, tileIndex, treeSize);
  if (offset + count > width) throw new RangeError(`node ${level}/${index} is not complete in a tree of ${treeSize}`);
  return { tile: { level: tileLevel, index: tileIndex, width }, offset, count };
}

export function encodeTile(hashes: readonly Uint8Array[]): Uint8Array {
  if (hashes.length < 1 || hashes.length > TILE_WIDTH) throw new RangeError("a tile holds 1..256 hashes");
  const out = new Uint8Array(hashes.length * HASH_SIZE);
  hashes.forEach((h, i) => {
    if (h.length !== HASH_SIZE) throw new TypeError("tile hashes must be 32 bytes");
    out.set(h, i * HASH_SIZE);
  });
  return out;
}

/** Splits tile bytes into hashes, refusing a body whose length does not match the width. */
export function decodeTile(data: Uint8Array, width: number): Uint8Array[] {
  if (data.length !== width * HASH_SIZE) throw new LogFormatError(`tile is ${data.length} bytes, want ${width * HASH_SIZE}`);
  return Array.from({ length: width }, (_, i) => data.slice(i * HASH_SIZE, (i + 1) * HASH_SIZE));
}
