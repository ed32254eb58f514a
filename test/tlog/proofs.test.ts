import { describe, expect, it } from "vitest";
import { hexEncode } from "../../src/tlog/encoding";
import { leafHash } from "../../src/tlog/merkle";
import {
  consistencyProof,
  consistencyProofRanges,
  inclusionProof,
  nodesForRanges,
  perfectNodes,
  rootFromInclusionProof,
  treeRoot,
  verifyConsistency,
  verifyInclusion,
} from "../../src/tlog/proofs";
import { h, makeLeafHashes, naiveTree } from "./helpers";
import { CONSISTENCY_PROOFS, INCLUSION_PROOFS, LEAF_INPUTS, ROOT_HASHES } from "./vectors";

const hex = hexEncode;
const SOME = h("abacaba000000000000000000000000000000000000000000060061e00123456");
const EMPTY = h(ROOT_HASHES[0]);
const flip = (proof: Uint8Array[], i: number, bit: number) =>
  proof.map((p, j) => (j === i ? p.map((b, k) => (k === 0 ? b ^ bit : b)) : p));

/** Every way transparency-dev/merkle's verify_test.go corrupts an inclusion proof. */
function inclusionProbes(index: number, size: number, proof: Uint8Array[], root: Uint8Array, leaf: Uint8Array) {
  const probes: [string, number, number, Uint8Array[], Uint8Array, Uint8Array][] = [
    ["index - 1", index - 1, size, proof, root, leaf],
    ["index + 1", index + 1, size, proof, root, leaf],
    ["index ^ 2", index ^ 2, size, proof, root, leaf],
    ["size * 2", index, size * 2, proof, root, leaf],
    ["size / 2", index, Math.floor(size / 2), proof, root, leaf],
    ["wrong leaf", index, size, proof, root, SOME],
    ["empty root", index, size, proof, EMPTY, leaf],
    ["random root", index, size, proof, SOME, leaf],
    ["trailing hash", index, size, [...proof, SOME], root, leaf],
    ["trailing root", index, size, [...proof, root], root, leaf],
    ["preceding root", index, size, [root, ...proof], root, leaf],
    ["short hash", index, size, [...proof, new Uint8Array(0)], root, leaf],
  ];
  proof.forEach((_, i) => probes.push([`flipped ${i}`, index, size, flip(proof, i, 8), root, leaf]));
  if (proof.length > 0) probes.push(["removed", index, size, proof.slice(0, -1), root, leaf]);
  if (proof.length > 1) probes.push(["inserted", index, size, [proof[0], SOME, ...proof.slice(1)], root, leaf]);
  return probes;
}

function consistencyProbes(size1: number, size2: number, proof: Uint8Array[], root1: Uint8Array, root2: Uint8Array) {
  const probes: [string, number, number, Uint8Array[], Uint8Array, Uint8Array][] = [
    ["size1 - 1", size1 - 1, size2, proof, root1, root2],
    ["size1 + 1", size1 + 1, size2, proof, root1, root2],
    ["size1 ^ 2", size1 ^ 2, size2, proof, root1, root2],
    ["size2 * 2", size1, size2 * 2, proof, root1, root2],
    ["size2 / 2", size1, Math.floor(size2 / 2), proof, root1, root2],
    ["wrong root1", size1, size2, proof, SOME, root2],
    ["wrong root2", size1, size2, proof, root1, SOME],
    ["swapped roots", size1, size2, proof, root2, root1],
    ["empty proof", size1, size2, [], root1, root2],
    ["trailing root1", size1, size2, [...proof, root1], root1, root2],
    ["trailing root2", size1, size2, [...proof, root2], root1, root2],
    ["preceding root1", size1, size2, [root1, ...proof], root1, root2],
    ["preceding root2", size1, size2, [root2, ...proof], root1, root2],
    ["preceding proof[0]", size1, size2, [proof[0], ...proof], root1, root2],
    ["truncated", size1, size2, proof.slice(0, -1), root1, root2],
  ];
  proof.forEach((_, i) => probes.push([`flipped ${i}`, size1, size2, flip(proof, i, 16), root1, root2]));
  return probes;
}

describe("published proof vectors (transparency-dev/merkle proof/verify_test.go)", async () => {
  const leaves = await Promise.all(LEAF_INPUTS.map((x) => leafHash(h(x))));
  const { getNode } = naiveTree(leaves);

  it("generates and verifies the inclusion vectors", async () => {
    for (const v of INCLUSION_PROOFS) {
      const index = v.leaf - 1;
      const proof = await inclusionProof(index, v.size, getNode);
      expect(proof.map(hex), `${index}@${v.size}`).toEqual(v.proof);
      const root = h(ROOT_HASHES[v.size]);
      expect(await verifyInclusion(leaves[index], index, v.size, proof, root)).toBe(true);
      for (const [name, i, s, p, r, l] of inclusionProbes(index, v.size, proof, root, leaves[index])) {
        expect(await verifyInclusion(l, i, s, p, r), name).toBe(false);
      }
    }
  });

  it("generates and verifies the consistency vectors", async () => {
    for (const v of CONSISTENCY_PROOFS) {
      const proof = await consistencyProof(v.size1, v.size2, getNode);
      expect(proof.map(hex), `${v.size1}->${v.size2}`).toEqual(v.proof);
      const [r1, r2] = [h(ROOT_HASHES[v.size1]), h(ROOT_HASHES[v.size2])];
      expect(await verifyConsistency(v.size1, v.size2, proof, r1, r2)).toBe(true);
      if (proof.length === 0) continue;
      for (const [name, s1, s2, p, a, b] of consistencyProbes(v.size1, v.size2, proof, r1, r2)) {
        expect(await verifyConsistency(s1, s2, p, a, b), name).toBe(false);
      }
    }
  });

  it("handles the edge cases of TestVerifyConsistency and TestVerifyInclusion", async () => {
    const any1 = SOME;
    const any2 = h(ROOT_HASHES[3]);
    expect(await verifyConsistency(0, 0, [], any1, any1)).toBe(true);
    expect(await verifyConsistency(0, 1, [], any1, any2)).toBe(true);
    expect(await verifyConsistency(1, 1, [], any2, any2)).toBe(true);
    expect(await verifyConsistency(1, 1, [], any1, any2)).toBe(false);
    expect(await verifyConsistency(1, 0, [], any1, any2)).toBe(false);
    expect(await verifyConsistency(2, 1, [], any1, any2)).toBe(false);
    expect(await verifyConsistency(1, 2, [], any1, any2)).toBe(false);
    expect(await verifyConsistency(0, 0, [EMPTY], EMPTY, EMPTY)).toBe(false);
    expect(await verifyConsistency(0, 1, [EMPTY], EMPTY, EMPTY)).toBe(false);
    expect(await verifyConsistency(1, 1, [EMPTY], EMPTY, EMPTY)).toBe(false);
    for (const [index, size] of [[0, 0], [0, 1], [1, 0], [2, 1]]) {
      expect(await verifyInclusion(SOME, index, size, [], EMPTY)).toBe(false);
    }
    const single = await leafHash(new TextEncoder().encode("data"));
    expect(await verifyInclusion(single, 0, 1, [], single)).toBe(true);
    expect(await verifyInclusion(single, 0, 1, [], new Uint8Array(0))).toBe(false);
    expect(await verifyInclusion(new Uint8Array(0), 0, 1, [], single)).toBe(false);
  });
});

describe("every proof in trees of up to 64 leaves", async () => {
  const N = 64;
  const leaves = await makeLeafHashes(N);
  const naive = naiveTree(leaves);
  const roots = [EMPTY, ...(await Promise.all(Array.from({ length: N }, (_, i) => naive.mth(0, i + 1))))];

  it("inclusion proofs match RFC 6962 PATH, verify, and reject tampering", async () => {
    let checked = 0;
    for (let size = 1; size <= N; size++) {
      expect(hex(await treeRoot(size, naive.getNode))).toBe(hex(roots[size]));
      for (let index = 0; index < size; index++) {
        const proof = await inclusionProof(index, size, naive.getNode);
        expect(proof.map(hex)).toEqual((await naive.path(index, 0, size)).map(hex));
        expect(hex((await rootFromInclusionProof(leaves[index], index, size, proof))!)).toBe(hex(roots[size]));
        for (const [name, i, s, p, r, l] of inclusionProbes(index, size, proof, roots[size], leaves[index])) {
          expect(await verifyInclusion(l, i, s, p, r), `${index}@${size} ${name}`).toBe(false);
        }
        checked++;
      }
    }
    expect(checked).toBe((N * (N + 1)) / 2);
  });

  it("consistency proofs match RFC 6962 SUBPROOF, verify, and reject tampering", async () => {
    for (let size2 = 1; size2 <= N; size2++) {
      for (let size1 = 0; size1 <= size2; size1++) {
        const proof = await consistencyProof(size1, size2, naive.getNode);
        const expected = size1 === 0 ? [] : await naive.subproof(size1, 0, size2, true);
        expect(proof.map(hex), `${size1}->${size2}`).toEqual(expected.map(hex));
        expect(await verifyConsistency(size1, size2, proof, roots[size1], roots[size2]), `${size1}->${size2}`).toBe(true);
        if (proof.length === 0) continue;
        for (const [name, s1, s2, p, a, b] of consistencyProbes(size1, size2, proof, roots[size1], roots[size2])) {
          expect(await verifyConsistency(s1, s2, p, a, b), `${size1}->${size2} ${name}`).toBe(false);
        }
      }
    }
  });

  it("a proof from a different tree does not verify", async () => {
    const other = naiveTree(await makeLeafHashes(N, 1));
    for (const [m, n] of [[3, 7], [8, 64], [13, 50], [32, 33]]) {
      const proof = await consistencyProof(m, n, other.getNode);
      expect(await verifyConsistency(m, n, proof, roots[m], roots[n])).toBe(false);
    }
  });
});

describe("proof node planning", () => {
  it("decomposes ranges into perfect subtrees", () => {
    expect(perfectNodes(0, 7)).toEqual([{ level: 2, index: 0 }, { level: 1, index: 2 }, { level: 0, index: 6 }]);
    expect(perfectNodes(8, 16)).toEqual([{ level: 3, index: 1 }]);
    expect(perfectNodes(65536, 70000).map((n) => n.level)).toEqual([12, 8, 6, 5, 4]);
  });

  it("needs O(log n) nodes for a consistency proof", () => {
    const nodes = nodesForRanges(consistencyProofRanges(12345, 9_000_000));
    expect(nodes.length).toBeLessThanOrEqual(2 * Math.log2(9_000_000));
  });

  it("rejects impossible requests", () => {
    expect(() => consistencyProofRanges(5, 4)).toThrow();
    return expect(inclusionProof(4, 4, async () => SOME)).rejects.toThrow();
  });
});
