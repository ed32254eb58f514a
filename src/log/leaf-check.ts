/**
 * For verify: each walked row's hash against its leaf in the project's tree.
 * Leaf i is the event with seq i + 1 and its RFC 6962 leaf hash is
 * SHA-256(0x00 || the 32 bytes of the event's hash), so one digest per row.
 */
import { hexDecode, hexEncode } from "./encoding.ts";
import { leafHash } from "./merkle.ts";

/** The RFC 6962 leaf hash (hex) of an event whose hash is `hashHex`; null for a malformed hash. */
export async function eventLeafHash(hashHex: string): Promise<string | null> {
  if (!/^[0-9a-f]{64}$/.test(hashHex)) return null;
  return hexEncode(await leafHash(hexDecode(hashHex)));
}

/**
 * One verify page's leaves, fetched once (`fetchLeaves` is the ledger's
 * leavesAt RPC: only the page's own indexes, which a windowed page may scatter
 * over the whole tree); returns a per-row check answering true when the row's
 * hash is not its leaf. Rows past the published tree answer false: the log
 * has not taken them yet (a backfill under way), which verify reports through
 * the checkpoint's tree_size rather than as a failure.
 */
export async function pageLeafCheck(
  fetchLeaves: (indexes: number[]) => Promise<Record<number, string>>,
  page: ReadonlyArray<{ seq: number }>,
): Promise<(row: { seq: number; hash: string }) => Promise<boolean>> {
  if (page.length === 0) return async () => false;
  const leaves = await fetchLeaves(page.map((row) => row.seq - 1));
  return async (row) => {
    const leaf = leaves[row.seq - 1];
    return leaf !== undefined && (await eventLeafHash(row.hash)) !== leaf;
  };
}
