/** Reference (naive, definition-following) helpers for the log tests. */
import { hexDecode } from "../../src/tlog/encoding";
import { leafHash, nodeHash, splitPoint } from "../../src/tlog/merkle";
import type { GetNode } from "../../src/tlog/proofs";

export const h = hexDecode;

/** Leaf hashes of `n` distinct leaves (leaf data = 4-byte big-endian index + salt). */
export function makeLeafHashes(n: number, salt = 0): Promise<Uint8Array[]> {
  return Promise.all(
    Array.from({ length: n }, (_, i) => {
      const data = new Uint8Array(5);
      new DataView(data.buffer).setUint32(0, i);
      data[4] = salt;
      return leafHash(data);
    }),
  );
}

/**
 * MTH(D[begin:end]) straight from RFC 6962 section 2.1, memoised so the
 * exhaustive proof tests stay fast. Deliberately shares no code with
 * src/tlog/proofs.ts beyond the two hash primitives.
 */
export function naiveTree(leaves: Uint8Array[]) {
  const memo = new Map<string, Promise<Uint8Array>>();
  const mth = (begin: number, end: number): Promise<Uint8Array> => {
    const key = `${begin}:${end}`;
    let v = memo.get(key);
    if (!v) {
      if (end - begin === 1) v = Promise.resolve(leaves[begin]);
      else {
        const k = splitPoint(end - begin);
        v = Promise.all([mth(begin, begin + k), mth(begin + k, end)]).then(([l, r]) => nodeHash(l, r));
      }
      memo.set(key, v);
    }
    return v;
  };
  const getNode: GetNode = (level, index) => mth(index * 2 ** level, (index + 1) * 2 ** level);

  /** RFC 6962 2.1.1 PATH(m, D[begin:end]), literally. */
  const path = async (m: number, begin: number, end: number): Promise<Uint8Array[]> => {
    const n = end - begin;
    if (n === 1) return [];
    const k = splitPoint(n);
    if (m < k) return [...(await path(m, begin, begin + k)), await mth(begin + k, end)];
    return [...(await path(m - k, begin + k, end)), await mth(begin, begin + k)];
  };

  /** RFC 6962 2.1.2 SUBPROOF(m, D[begin:end], b), literally. */
  const subproof = async (m: number, begin: number, end: number, b: boolean): Promise<Uint8Array[]> => {
    const n = end - begin;
    if (m === n) return b ? [] : [await mth(begin, end)];
    const k = splitPoint(n);
    if (m <= k) return [...(await subproof(m, begin, begin + k, b)), await mth(begin + k, end)];
    return [...(await subproof(m - k, begin + k, end, false)), await mth(begin, begin + k)];
  };

  return { mth, getNode, path, subproof };
}
