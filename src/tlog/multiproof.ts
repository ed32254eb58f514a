/**
 * A proof that a set of leaves sits at given indexes of one tree: the hashes
 * of the subtrees, left to right, that hold none of the leaves. With the
 * leaves themselves they rebuild the root, following RFC 6962's split. One
 * inclusion proof per leaf would repeat the shared upper nodes for every row
 * of an export; this names each needed node once, so a run of consecutive
 * rows costs about 2 log n hashes and a scattered set about log(n/m) per row.
 */
import type { LeafRange } from "./proofs.ts";
import { nodeHash, splitPoint } from "./merkle.ts";

/** First position in indexes[lo, hi) at or past `at` (indexes ascending). */
function lowerBound(indexes: readonly number[], lo: number, hi: number, at: number): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (indexes[mid] < at) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Whether `indexes` is a strictly ascending run of leaf indexes inside a tree of `size`. */
export function isLeafSet(indexes: readonly number[], size: number): boolean {
  for (let i = 0; i < indexes.length; i++) {
    const n = indexes[i];
    if (!Number.isSafeInteger(n) || n < 0 || n >= size || (i > 0 && n <= indexes[i - 1])) return false;
  }
  return true;
}

/** The subtrees whose hashes prove `indexes` (ascending, distinct, < size), in the order the proof lists them. */
export function multiproofRanges(indexes: readonly number[], size: number): LeafRange[] {
  if (!isLeafSet(indexes, size)) throw new RangeError("leaf indexes must be ascending, distinct and inside the tree");
  const out: LeafRange[] = [];
  if (indexes.length === 0) return size === 0 ? out : [{ begin: 0, end: size }];
  const walk = (begin: number, end: number, lo: number, hi: number) => {
    if (lo === hi) {
      out.push({ begin, end });
      return;
    }
    if (end - begin === 1) return;
    const mid = begin + splitPoint(end - begin);
    const cut = lowerBound(indexes, lo, hi, mid);
    walk(begin, mid, lo, cut);
    walk(mid, end, cut, hi);
  };
  walk(0, size, 0, indexes.length);
  return out;
}

/**
 * The root that `leaves` (leaf hashes at ascending `indexes`) and `proof`
 * rebuild for a tree of `size`; null when the proof has too few or too many
 * hashes for that set, so a dropped or added row never passes.
 */
export async function rootFromMultiproof(
  indexes: readonly number[],
  leaves: readonly Uint8Array[],
  size: number,
  proof: readonly Uint8Array[],
): Promise<Uint8Array | null> {
  if (indexes.length === 0 || indexes.length !== leaves.length || !isLeafSet(indexes, size)) return null;
  let used = 0;
  let short = false;
  const walk = async (begin: number, end: number, lo: number, hi: number): Promise<Uint8Array> => {
    if (lo === hi) {
      if (used >= proof.length) short = true;
      return proof[used++] ?? new Uint8Array(32);
    }
    if (end - begin === 1) return leaves[lo];
    const mid = begin + splitPoint(end - begin);
    const cut = lowerBound(indexes, lo, hi, mid);
    const left = await walk(begin, mid, lo, cut);
    return nodeHash(left, await walk(mid, end, cut, hi));
  };
  const root = await walk(0, size, 0, indexes.length);
  return short || used !== proof.length ? null : root;
}
