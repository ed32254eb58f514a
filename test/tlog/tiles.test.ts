import { describe, expect, it } from "vitest";
import { hexEncode } from "../../src/tlog/encoding";
import { TreeFrontier, rootFromLeafHashes } from "../../src/tlog/merkle";
import { inclusionProof, treeRoot, verifyInclusion } from "../../src/tlog/proofs";
import { appendLeaves, nodeReader, readTile, tileEntriesFromLeaves, type EntryReader, type TileEntry } from "../../src/tlog/tile-builder";
import {
  decodeTile,
  encodeTile,
  encodeTileIndex,
  newTiles,
  parseTilePath,
  partialTiles,
  tilePath,
  tileSliceForNode,
  tileWidth,
} from "../../src/tlog/tiles";
import { makeLeafHashes, naiveTree } from "./helpers";

const hex = hexEncode;

describe("tile paths (c2sp.org/tlog-tiles)", () => {
  it("encodes indexes in x-prefixed groups of three digits", () => {
    expect(encodeTileIndex(1234067)).toBe("x001/x234/067");
    expect(encodeTileIndex(0)).toBe("000");
    expect(encodeTileIndex(999)).toBe("999");
    expect(encodeTileIndex(1000)).toBe("x001/000");
    expect(encodeTileIndex(Number.MAX_SAFE_INTEGER)).toBe("x009/x007/x199/x254/x740/991");
  });

  it("writes full and partial tile paths", () => {
    expect(tilePath(0, 1234067)).toBe("tile/0/x001/x234/067");
    expect(tilePath(2, 5, 256)).toBe("tile/2/005");
    expect(tilePath(1, 1234067, 17)).toBe("tile/1/x001/x234/067.p/17");
    expect(() => tilePath(64, 0)).toThrow();
    expect(() => tilePath(0, 0, 0)).toThrow();
    expect(() => tilePath(0, -1)).toThrow();
  });

  it("parses what it writes", () => {
    for (const [level, index, width] of [[0, 0, 256], [0, 1234067, 256], [1, 1234067, 17], [63, 7, 1], [5, 999, 255], [2, 1000, 3]]) {
      expect(parseTilePath(tilePath(level, index, width))).toEqual({ level, index, width });
    }
  });

  it("rejects malformed and non-canonical paths", () => {
    const bad = [
      "tile/00/000", "tile/64/000", "tile/-1/000", "tile/1e1/000", "tile/0/x000/001", "tile/0/1", "tile/0/0001", "tile/0/01",
      "tile/0/001.p/0", "tile/0/001.p/256", "tile/0/001.p/012", "tile/0/001.p/", "tile/0/001.p/-1", "tile/0/001.p/1.p/2",
      "tile/0/x001", "tile/0/001/x002", "tile/0/001/002", "tile/0/x001/x234/067/", "tile/0/x1000/000", "tile/0/+001",
      "0/001", "/tile/0/001", " tile/0/001", "tile/0/001 ", "tile/entries/000", "tile/0/", "tile//000", "", "tile/0/x999/x999/x999/x999/x999/x999/999",
    ];
    for (const path of bad) expect(parseTilePath(path), path).toBeNull();
  });
});

describe("tile layout", () => {
  it("matches the spec's example tree of 70,000", () => {
    expect(partialTiles(70000)).toEqual([
      { level: 0, index: 273, width: 112 },
      { level: 1, index: 1, width: 17 },
      { level: 2, index: 0, width: 1 },
    ]);
    const all = newTiles(0, 70000);
    expect(all.filter((t) => t.level === 0 && t.width === 256)).toHaveLength(273);
    expect(all.filter((t) => t.level === 1 && t.width === 256)).toHaveLength(1);
    expect(all).toHaveLength(273 + 1 + 1 + 1 + 1);
    expect(newTiles(0, 256)).toEqual([{ level: 0, index: 0, width: 256 }, { level: 1, index: 0, width: 1 }]);
    expect(partialTiles(0)).toEqual([]);
  });

  it("lists the tiles that change between sizes", () => {
    expect(newTiles(100, 100)).toEqual([]);
    expect(newTiles(100, 101)).toEqual([{ level: 0, index: 0, width: 101 }]);
    expect(newTiles(255, 257)).toEqual([
      { level: 0, index: 0, width: 256 },
      { level: 0, index: 1, width: 1 },
      { level: 1, index: 0, width: 1 },
    ]);
    expect(newTiles(1000, 1000 + 3 * 256).filter((t) => t.level === 0)).toHaveLength(4);
    expect(tileWidth(1, 0, 65535)).toBe(255);
    expect(tileWidth(1, 1, 65535)).toBe(0);
  });

  it("finds the tile slice holding any node", () => {
    expect(tileSliceForNode(0, 300, 1000)).toEqual({ tile: { level: 0, index: 1, width: 256 }, offset: 44, count: 1 });
    expect(tileSliceForNode(3, 5, 1000)).toEqual({ tile: { level: 0, index: 0, width: 256 }, offset: 40, count: 8 });
    expect(tileSliceForNode(8, 2, 1000)).toEqual({ tile: { level: 1, index: 0, width: 3 }, offset: 2, count: 1 });
    expect(tileSliceForNode(12, 16, 70000)).toEqual({ tile: { level: 1, index: 1, width: 17 }, offset: 0, count: 16 });
    expect(() => tileSliceForNode(3, 124, 999)).toThrow();
  });

  it("encodes and decodes tile bytes", () => {
    const hashes = [new Uint8Array(32).fill(1), new Uint8Array(32).fill(2)];
    const bytes = encodeTile(hashes);
    expect(bytes.length).toBe(64);
    expect(decodeTile(bytes, 2)).toEqual(hashes);
    expect(() => decodeTile(bytes, 3)).toThrow();
    expect(() => decodeTile(bytes.slice(1), 2)).toThrow();
    expect(() => encodeTile([])).toThrow();
  });
});

describe("tile builder", async () => {
  const N = 70000;
  const leaves = await makeLeafHashes(N);
  const frontier = TreeFrontier.empty();
  const entries: Uint8Array[][] = [[], [], []];
  const store = (list: TileEntry[]) => list.forEach((e) => (entries[e.tileLevel][e.index] = e.hash));
  // Uneven batches, as a Durable Object would see them.
  for (let at = 0, step = 1; at < N; at += step, step = (step * 7 + 3) % 5000) {
    store(await appendLeaves(frontier, leaves.slice(at, Math.min(N, at + step))));
  }
  const read: EntryReader = async (level, start, count) => entries[level].slice(start, start + count);

  it("stores leaf hashes at level 0 and full-tile roots above", async () => {
    expect(entries[0]).toHaveLength(N);
    expect(entries[1]).toHaveLength(273);
    expect(entries[2]).toHaveLength(1);
    expect(hex(entries[1][5])).toBe(hex(await rootFromLeafHashes(leaves.slice(5 * 256, 6 * 256))));
    expect(hex(entries[2][0])).toBe(hex(await rootFromLeafHashes(leaves.slice(0, 65536))));
    const rebuilt = await tileEntriesFromLeaves(leaves.slice(0, 1000));
    expect(rebuilt.entries.filter((e) => e.tileLevel === 1).map((e) => hex(e.hash))).toEqual(entries[1].slice(0, 3).map(hex));
    expect(rebuilt.frontier.size).toBe(1000);
  });

  it("serves every tile of the tree, and refuses tiles it does not have", async () => {
    for (const tile of newTiles(0, N)) {
      const bytes = await readTile(read, tile, N);
      expect(bytes).not.toBeNull();
      const hashes = decodeTile(bytes!, tile.width);
      expect(hex(hashes[0])).toBe(hex(entries[tile.level][tile.index * 256]));
    }
    expect(await readTile(read, { level: 0, index: 273, width: 256 }, N)).toBeNull();
    expect(await readTile(read, { level: 0, index: 273, width: 113 }, N)).toBeNull();
    expect(await readTile(read, { level: 3, index: 0, width: 1 }, N)).toBeNull();
    // An older checkpoint's partial tile stays available.
    expect(await readTile(read, { level: 0, index: 273, width: 100 }, N)).not.toBeNull();
  });

  it("builds proofs from stored entries that match the frontier root", async () => {
    const root = await frontier.root();
    const getNode = nodeReader(read, N);
    expect(hex(await treeRoot(N, getNode))).toBe(hex(root));
    for (const index of [0, 1, 255, 256, 65535, 65536, 69999, 12345]) {
      const proof = await inclusionProof(index, N, getNode);
      expect(await verifyInclusion(leaves[index], index, N, proof, root)).toBe(true);
    }
    const small = naiveTree(leaves.slice(0, 700));
    const smallNodes = nodeReader(read, 700);
    for (const [level, index] of [[0, 699], [4, 40], [8, 1], [9, 0]]) {
      expect(hex(await smallNodes(level, index))).toBe(hex(await small.getNode(level, index)));
    }
    expect(() => smallNodes(8, 2)).toThrow();
  });
});
