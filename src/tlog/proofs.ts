/**
 * Inclusion and consistency proofs (RFC 6962 section 2.1.1-2.1.2, RFC 9162
 * section 2.1.3-2.1.4). Generation is split in two so a client can first ask
 * which nodes it needs (and fetch the fewest tiles holding them), then build
 * the proof from whatever node source it has.
 */
import { HASH_SIZE, bytesEqual, isCount } from "./encoding.ts";
import { emptyRoot, nodeHash, splitPoint } from "./merkle.ts";

/** Hash of the perfect subtree at (level, index); see merkle.ts for coordinates. */
export type GetNode = (level: number, index: number) => Promise<Uint8Array>;

/** A run of leaves [begin, end) whose MTH is one proof element. */
export interface LeafRange {
  begin: number;
  end: number;
}

export interface NodeId {
  level: number;
  index: number;
}

/**
 * The perfect subtrees rangeHash reads for MTH(D[begin:end]), largest first.
 * Proof ranges start at a multiple of a power of two at least their length,
 * so this is the binary decomposition of the length: O(log n) nodes.
 */
export function perfectNodes(begin: number, end: number): NodeId[] {
  const n = end - begin;
  if (n <= 0) throw new RangeError("empty range");
  if (isPowerOfTwo(n) && begin % n === 0) return [{ level: Math.log2(n), index: begin / n }];
  const k = splitPoint(n);
  return [...perfectNodes(begin, begin + k), ...perfectNodes(begin + k, end)];
}

/** Exact for any safe integer, unlike testing Math.log2 for an integer result. */
export function isPowerOfTwo(n: number): boolean {
  let p = 1;
  while (p < n) p *= 2;
  return p === n;
}

/** MTH(D[begin:end]) from perfect-subtree hashes, split as RFC 6962 defines it (same recursion as perfectNodes). */
export async function rangeHash(begin: number, end: number, getNode: GetNode): Promise<Uint8Array> {
  const n = end - begin;
  if (n <= 0) throw new RangeError("empty range");
  if (isPowerOfTwo(n) && begin % n === 0) return getNode(Math.log2(n), begin / n);
  const k = splitPoint(n);
  const [left, right] = await Promise.all([rangeHash(begin, begin + k, getNode), rangeHash(begin + k, end, getNode)]);
  return nodeHash(left, right);
}

/** Root hash of the tree of `size` leaves. */
export function treeRoot(size: number, getNode: GetNode): Promise<Uint8Array> {
  return size === 0 ? emptyRoot() : rangeHash(0, size, getNode);
}

/** PATH(index, D[0:size]): sibling ranges from the leaf upwards. */
export function inclusionProofRanges(index: number, size: number): LeafRange[] {
  if (!isCount(index) || !isCount(size) || index >= size) throw new RangeError("index must be below size");
  const out: LeafRange[] = [];
  const walk = (m: number, begin: number, end: number): void => {
    const n = end - begin;
    if (n === 1) return;
    const k = splitPoint(n);
    if (m < k) {
      walk(m, begin, begin + k);
      out.push({ begin: begin + k, end });
    } else {
      walk(m - k, begin + k, end);
      out.push({ begin, end: begin + k });
    }
  };
  walk(index, 0, size);
  return out;
}

/** PROOF(size1, D[0:size2]) = SUBPROOF(size1, D[0:size2], true) as ranges. */
export function consistencyProofRanges(size1: number, size2: number): LeafRange[] {
  if (!isCount(size1) || !isCount(size2) || size1 > size2) throw new RangeError("size1 must not exceed size2");
  const out: LeafRange[] = [];
  if (size1 === 0 || size1 === size2) return out;
  const sub = (m: number, begin: number, end: number, whole: boolean): void => {
    const n = end - begin;
    if (m === n) {
      if (!whole) out.push({ begin, end });
      return;
    }
    const k = splitPoint(n);
    if (m <= k) {
      sub(m, begin, begin + k, whole);
      out.push({ begin: begin + k, end });
    } else {
      sub(m - k, begin + k, end, false);
      out.push({ begin, end: begin + k });
    }
  };
  sub(size1, 0, size2, true);
  return out;
}

/** Every perfect node a set of ranges needs, without duplicates. */
export function nodesForRanges(ranges: readonly LeafRange[]): NodeId[] {
  const seen = new Map<string, NodeId>();
  for (const r of ranges) for (const n of perfectNodes(r.begin, r.end)) seen.set(`${n.level}/${n.index}`, n);
  return [...seen.values()];
}

function resolve(ranges: LeafRange[], getNode: GetNode): Promise<Uint8Array[]> {
  return Promise.all(ranges.map((r) => rangeHash(r.begin, r.end, getNode)));
}

export async function inclusionProof(index: number, size: number, getNode: GetNode): Promise<Uint8Array[]> {
  return resolve(inclusionProofRanges(index, size), getNode);
}

export async function consistencyProof(size1: number, size2: number, getNode: GetNode): Promise<Uint8Array[]> {
  return resolve(consistencyProofRanges(size1, size2), getNode);
}

const isHash = (h: Uint8Array): boolean => h instanceof Uint8Array && h.length === HASH_SIZE;

/** RFC 9162 section 2.1.3.2, computing the root the proof implies (or null). */
export async function rootFromInclusionProof(
  leaf: Uint8Array,
  index: number,
  size: number,
  proof: readonly Uint8Array[],
): Promise<Uint8Array | null> {
  if (!isCount(index) || !isCount(size) || index >= size || !isHash(leaf) || !proof.every(isHash)) return null;
  // Plain arithmetic instead of bit operators: those truncate to 32 bits.
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      r = await nodeHash(p, r);
      while (fn % 2 === 0 && fn !== 0) {
        fn /= 2;
        sn = Math.floor(sn / 2);
      }
    } else {
      r = await nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : null;
}

export async function verifyInclusion(
  leaf: Uint8Array,
  index: number,
  size: number,
  proof: readonly Uint8Array[],
  root: Uint8Array,
): Promise<boolean> {
  const computed = await rootFromInclusionProof(leaf, index, size, proof);
  return computed !== null && isHash(root) && bytesEqual(computed, root);
}

/**
 * RFC 9162 section 2.1.4.2. Equal sizes need an empty proof and equal roots;
 * from size 0 every tree is consistent and the proof must be empty.
 */
export async function verifyConsistency(
  size1: number,
  size2: number,
  proof: readonly Uint8Array[],
  root1: Uint8Array,
  root2: Uint8Array,
): Promise<boolean> {
  if (!isCount(size1) || !isCount(size2) || size1 > size2 || !proof.every(isHash)) return false;
  if (size1 === 0) return proof.length === 0;
  if (!isHash(root1) || !isHash(root2)) return false;
  if (size1 === size2) return proof.length === 0 && bytesEqual(root1, root2);
  if (proof.length === 0) return false;
  const path = isPowerOfTwo(size1) ? [root1, ...proof] : [...proof];
  let fn = size1 - 1;
  let sn = size2 - 1;
  while (fn % 2 === 1) {
    fn = (fn - 1) / 2;
    sn = Math.floor(sn / 2);
  }
  let fr = path[0];
  let sr = path[0];
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      [fr, sr] = await Promise.all([nodeHash(c, fr), nodeHash(c, sr)]);
      while (fn % 2 === 0 && fn !== 0) {
        fn /= 2;
        sn = Math.floor(sn / 2);
      }
    } else {
      sr = await nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && bytesEqual(fr, root1) && bytesEqual(sr, root2);
}
