/**
 * Server side of tlog-tiles. The log stores "tile entries": the hash of node
 * (8L, i) for every tile level L, which is exactly the content of the tiles.
 * From those it can serve any tile and build any proof, and it only ever
 * appends entries (an entry never changes once its subtree is complete).
 *
 * Typical use in a Durable Object, per batch of new events:
 *
 *   const frontier = TreeFrontier.fromJSON(saved);        // or TreeFrontier.empty()
 *   const entries = await appendLeaves(frontier, hashes); // store all of them
 *   save(frontier.toJSON()); const root = await frontier.root();
 *
 * and to serve `tile/L/N[.p/W]` or proofs, give readTile / nodeReader a
 * function reading stored entries.
 */
import { isCount } from "./encoding.ts";
import { TreeFrontier, rootFromLeafHashes } from "./merkle.ts";
import type { GetNode } from "./proofs.ts";
import { TILE_HEIGHT, TILE_WIDTH, type TileId, encodeTile, tileSliceForNode, tileWidth } from "./tiles.ts";

export interface TileEntry {
  /** Tile level L: the entry is the hash of node (8L, index). */
  tileLevel: number;
  index: number;
  hash: Uint8Array;
}

/**
 * Reads `count` stored entries of a tile level starting at `start`. Must
 * return exactly that many (the caller only asks for complete entries).
 */
export type EntryReader = (tileLevel: number, start: number, count: number) => Promise<Uint8Array[]>;

/**
 * Appends leaf hashes to the frontier and returns the tile entries they
 * complete: the leaves themselves (tile level 0) and any node at a level
 * that is a multiple of 8. The caller persists them and the new frontier.
 */
export async function appendLeaves(frontier: TreeFrontier, leafHashes: readonly Uint8Array[]): Promise<TileEntry[]> {
  const created = await frontier.appendMany(leafHashes);
  return created
    .filter((n) => n.level % TILE_HEIGHT === 0)
    .map((n) => ({ tileLevel: n.level / TILE_HEIGHT, index: n.index, hash: n.hash }));
}

/**
 * All tile entries of the tree over `leafHashes` (leaf 0 first), and the
 * resulting frontier, for a rebuild or a backfill. O(n) hashes.
 */
export async function tileEntriesFromLeaves(
  leafHashes: readonly Uint8Array[],
): Promise<{ entries: TileEntry[]; frontier: TreeFrontier }> {
  const frontier = TreeFrontier.empty();
  const entries = await appendLeaves(frontier, leafHashes);
  return { entries, frontier };
}

/**
 * Hash of node (level, index) from stored entries: the root of 2^(level mod 8)
 * entries of tile level floor(level / 8). `treeSize` only checks that the
 * node is complete, so proofs never read past the tree they are for.
 */
export function nodeReader(read: EntryReader, treeSize: number): GetNode {
  const cache = new Map<string, Promise<Uint8Array>>();
  return (level, index) => {
    const key = `${level}/${index}`;
    let hash = cache.get(key);
    if (!hash) {
      const slice = tileSliceForNode(level, index, treeSize);
      const start = slice.tile.index * TILE_WIDTH + slice.offset;
      hash = read(slice.tile.level, start, slice.count).then((entries) => {
        if (entries.length !== slice.count) throw new Error(`entry reader returned ${entries.length} of ${slice.count} entries`);
        return rootFromLeafHashes(entries);
      });
      cache.set(key, hash);
    }
    return hash;
  };
}

/**
 * The bytes of a tile for a tree of `treeSize`, or null when the tree does
 * not have it (the route should 404). Partial tiles narrower than the current
 * one are served too: the spec requires serving the partials of every size a
 * checkpoint was issued for, and their bytes are a prefix of the stored
 * entries, so they never change.
 */
export async function readTile(read: EntryReader, tile: TileId, treeSize: number): Promise<Uint8Array | null> {
  if (!isCount(treeSize)) throw new RangeError("treeSize must be a non-negative safe integer");
  if (tile.width > tileWidth(tile.level, tile.index, treeSize)) return null;
  const entries = await read(tile.level, tile.index * TILE_WIDTH, tile.width);
  if (entries.length !== tile.width) throw new Error(`entry reader returned ${entries.length} of ${tile.width} entries`);
  return encodeTile(entries);
}
