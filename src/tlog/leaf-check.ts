/**
 * For verify: each walked row's hash against its leaf in the project's tree.
 * Leaf i is the event with seq i + 1 and its RFC 6962 leaf hash is
 * SHA-256(0x00 || the 32 bytes of the event's hash), so one digest per row.
 */
import { HASH_SIZE, bytesEqual, hexEncode } from "./encoding.ts";

const NIBBLE = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) NIBBLE["0123456789abcdef".charCodeAt(i)] = i;

/** 0x00 and the event's hash, reused: Web Crypto reads its input when called. */
const leafInput = new Uint8Array(1 + HASH_SIZE);

/** SHA-256(0x00 || hash bytes) of an event whose hash is `hashHex` (lowercase hex); null for a malformed hash. */
export function leafDigestOf(hashHex: string): Promise<ArrayBuffer> | null {
  if (hashHex.length !== 2 * HASH_SIZE) return null;
  for (let i = 0; i < HASH_SIZE; i++) {
    const hi = NIBBLE[hashHex.charCodeAt(2 * i)] ?? -1;
    const lo = NIBBLE[hashHex.charCodeAt(2 * i + 1)] ?? -1;
    if (hi < 0 || lo < 0) return null;
    leafInput[i + 1] = (hi << 4) | lo;
  }
  return crypto.subtle.digest("SHA-256", leafInput);
}

/** The RFC 6962 leaf hash (hex) of an event whose hash is `hashHex`; null for a malformed hash. */
export async function eventLeafHash(hashHex: string): Promise<string | null> {
  const digest = leafDigestOf(hashHex);
  return digest === null ? null : hexEncode(new Uint8Array(await digest));
}

/** The ledger's leavesAt answer: 32 bytes per asked index, in order; indexes at or past treeSize are zeros (not in the tree). */
export interface LeafRun {
  treeSize: number;
  leaves: Uint8Array;
}

/**
 * One verify page's leaves, fetched once (`fetchLeaves` is the ledger's
 * leavesAt RPC: only the page's own indexes, which a windowed page may scatter
 * over the whole tree). Returns the expected leaf of the page's i-th row, or
 * null for a row past the published tree: the log has not taken it yet (a
 * backfill under way), which verify reports through the checkpoint's tree_size
 * rather than as a failure.
 */
export async function pageLeaves(
  fetchLeaves: (indexes: number[]) => Promise<LeafRun>,
  page: ReadonlyArray<{ seq: number }>,
): Promise<(i: number) => Uint8Array | null> {
  if (page.length === 0) return () => null;
  const { treeSize, leaves } = await fetchLeaves(page.map((row) => row.seq - 1));
  return (i) => (page[i].seq - 1 < treeSize ? leaves.subarray(i * HASH_SIZE, (i + 1) * HASH_SIZE) : null);
}

/** Whether a row's hash differs from the leaf expected for it (never for a row past the tree); checkRow does the same in one pass. */
export async function leafDiffers(hashHex: string, expected: Uint8Array | null): Promise<boolean> {
  if (expected === null) return false;
  const digest = leafDigestOf(hashHex);
  return digest === null || !bytesEqual(new Uint8Array(await digest), expected);
}
