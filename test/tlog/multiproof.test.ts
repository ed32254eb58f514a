import { describe, expect, it } from "vitest";
import { leafHash, rootFromLeafHashes } from "../../src/tlog/merkle";
import { multiproofRanges, rootFromMultiproof } from "../../src/tlog/multiproof";

// The proof's hashes come straight from RFC 6962's definition over the ranges it names
// (rootFromLeafHashes rehashes each range), so the check is against the definition, not our tiles.
describe("multiproofs", () => {
  it("rebuild the RFC 6962 root for any leaf set of any tree, and fail with a leaf dropped, moved or added", async () => {
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed / 2 ** 31);
    for (const size of [1, 2, 3, 5, 8, 13, 31, 64, 77]) {
      const leaves = await Promise.all(Array.from({ length: size }, (_, i) => leafHash(new TextEncoder().encode(`event ${i}`))));
      const root = await rootFromLeafHashes(leaves);
      const sets = [[0], [size - 1], Array.from({ length: size }, (_, i) => i)];
      for (let k = 0; k < 6; k++) sets.push(Array.from({ length: size }, (_, i) => i).filter(() => random() < 0.3));
      for (const indexes of sets.filter((s) => s.length > 0)) {
        const proof = await Promise.all(multiproofRanges(indexes, size).map((r) => rootFromLeafHashes(leaves.slice(r.begin, r.end))));
        const mine = indexes.map((i) => leaves[i]);
        expect(await rootFromMultiproof(indexes, mine, size, proof)).toEqual(root);
        // A run of consecutive leaves needs at most two hashes per level.
        if (indexes.length === size) expect(proof).toHaveLength(0);
        if (indexes.length > 1) {
          expect(await rootFromMultiproof(indexes.slice(1), mine.slice(1), size, proof)).not.toEqual(root);
          const moved = indexes.map((i, n) => (n === 0 && i > 0 && !indexes.includes(i - 1) ? i - 1 : i));
          if (moved[0] !== indexes[0]) expect(await rootFromMultiproof(moved, mine, size, proof)).not.toEqual(root);
        }
        expect(await rootFromMultiproof(indexes, mine, size, [...proof, leaves[0]])).toBeNull();
      }
    }
    expect(() => multiproofRanges([3, 2], 5)).toThrow(RangeError);
    expect(() => multiproofRanges([5], 5)).toThrow(RangeError);
  });
});
