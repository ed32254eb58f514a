import { describe, expect, it } from "vitest";
import { hexEncode } from "../../src/tlog/encoding";
import {
  TreeFrontier,
  emptyRoot,
  frontierLevels,
  leafHash,
  nodeHash,
  rootFromLeafHashes,
  rootFromSubtrees,
} from "../../src/tlog/merkle";
import { h, makeLeafHashes, naiveTree } from "./helpers";
import { COMPACT_TREES, LEAF_INPUTS, NODE_HASHES, ROOT_HASHES } from "./vectors";

const hex = hexEncode;

describe("RFC 6962 hashing (transparency-dev/merkle vectors)", () => {
  it("hashes leaves and the empty tree", async () => {
    expect(hex(await emptyRoot())).toBe(ROOT_HASHES[0]);
    for (const [i, input] of LEAF_INPUTS.entries()) expect(hex(await leafHash(h(input)))).toBe(NODE_HASHES[0][i]);
    expect(hex(await nodeHash(h(NODE_HASHES[0][0]), h(NODE_HASHES[0][1])))).toBe(NODE_HASHES[1][0]);
  });

  it("computes the published roots for sizes 0 to 8", async () => {
    const leaves = await Promise.all(LEAF_INPUTS.map((x) => leafHash(h(x))));
    for (let size = 0; size <= 8; size++) {
      expect(hex(await rootFromLeafHashes(leaves.slice(0, size))), `size ${size}`).toBe(ROOT_HASHES[size]);
    }
  });

  it("keeps the published compact trees and roots when appending one leaf at a time", async () => {
    const frontier = TreeFrontier.empty();
    const created = new Map<string, string>();
    for (let size = 0; size <= 8; size++) {
      if (size > 0) {
        for (const n of await frontier.append(await leafHash(h(LEAF_INPUTS[size - 1])))) created.set(`${n.level}/${n.index}`, hex(n.hash));
      }
      expect(frontier.size).toBe(size);
      expect(frontier.hashes.map(hex)).toEqual(COMPACT_TREES[size].map(([l, i]) => NODE_HASHES[l][i]));
      expect(hex(await frontier.root())).toBe(ROOT_HASHES[size]);
    }
    // Every node of the 8-leaf tree was reported exactly as published.
    const all = NODE_HASHES.flatMap((row, level) => row.map((hash, index) => [`${level}/${index}`, hash]));
    expect([...created.entries()].sort()).toEqual(all.sort());
  });
});

describe("TreeFrontier", () => {
  it("gives the same frontier and nodes for any batching", async () => {
    const leaves = await makeLeafHashes(300);
    const naive = naiveTree(leaves);
    const batches = [[300], [1, 299], [255, 1, 44], [7, 9, 100, 3, 181], Array(300).fill(1)];
    for (const batch of batches) {
      const f = TreeFrontier.empty();
      let at = 0;
      for (const n of batch) {
        const created = await f.appendMany(leaves.slice(at, at + n));
        for (const node of created) {
          expect(hex(node.hash)).toBe(hex(await naive.getNode(node.level, node.index)));
        }
        at += n;
        expect(hex(await f.root())).toBe(hex(await naive.mth(0, at)));
        const levels = frontierLevels(at);
        const expected = await Promise.all(
          levels.map((level, i) => {
            const before = levels.slice(0, i).reduce((s, l) => s + 2 ** l, 0);
            return naive.getNode(level, before / 2 ** level);
          }),
        );
        expect(f.hashes.map(hex)).toEqual(expected.map(hex));
      }
    }
  });

  it("reports each completed node once", async () => {
    const leaves = await makeLeafHashes(100);
    const f = TreeFrontier.empty();
    const seen = new Set<string>();
    for (let at = 0; at < 100; at += 13) {
      for (const n of await f.appendMany(leaves.slice(at, at + 13))) {
        const key = `${n.level}/${n.index}`;
        expect(seen.has(key)).toBe(false);
        seen.add(key);
      }
    }
    // A tree of 100 leaves has 100 + 50 + 25 + 12 + 6 + 3 + 1 complete nodes.
    expect(seen.size).toBe(197);
  });

  it("round-trips through JSON and rejects malformed state", async () => {
    const leaves = await makeLeafHashes(77);
    const f = TreeFrontier.empty();
    await f.appendMany(leaves.slice(0, 50));
    const json = JSON.parse(JSON.stringify(f));
    expect(json.size).toBe(50);
    expect(json.hashes).toHaveLength(3);
    const g = TreeFrontier.fromJSON(json);
    await Promise.all([f.appendMany(leaves.slice(50)), g.appendMany(leaves.slice(50))]);
    expect(hex(await g.root())).toBe(hex(await f.root()));
    expect(hex(await g.root())).toBe(hex(await rootFromLeafHashes(leaves)));

    expect(() => TreeFrontier.fromJSON({ size: 50, hashes: json.hashes.slice(1) })).toThrow();
    expect(() => TreeFrontier.fromJSON({ size: -1, hashes: [] })).toThrow();
    expect(() => TreeFrontier.fromJSON({ size: 1, hashes: ["AAAA"] })).toThrow();
    expect(() => TreeFrontier.fromJSON(null as never)).toThrow();
    await expect(f.append(new Uint8Array(31))).rejects.toThrow();
  });

  it("computes a root from subtree roots like the frontier", async () => {
    const leaves = await makeLeafHashes(11);
    const f = TreeFrontier.empty();
    await f.appendMany(leaves);
    expect(hex(await rootFromSubtrees(f.hashes))).toBe(hex(await rootFromLeafHashes(leaves)));
    expect(hex(await rootFromSubtrees([]))).toBe(ROOT_HASHES[0]);
  });
});
