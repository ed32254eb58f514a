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
 * The seqs of `rows` whose hash is not their leaf. `leaves` are the ledger's
 * leafHashes(firstIndex, n) answer: leaf hashes of indexes firstIndex,
 * firstIndex + 1, ... Rows past the answer (not in the published tree yet)
 * are not judged here.
 */
export async function leafMismatches(
  rows: ReadonlyArray<{ seq: number; hash: string }>,
  firstIndex: number,
  leaves: readonly string[],
): Promise<number[]> {
  const judged = rows.filter((r) => r.seq - 1 >= firstIndex && r.seq - 1 < firstIndex + leaves.length);
  const hashes = await Promise.all(judged.map((r) => eventLeafHash(r.hash)));
  return judged.filter((r, i) => hashes[i] !== leaves[r.seq - 1 - firstIndex]).map((r) => r.seq);
}

/**
 * One verify page's leaves, fetched once (`fetchLeaves` is the ledger's
 * leafHashes RPC); returns a per-row check answering true when the row's hash
 * is not its leaf. Rows past the published tree answer false: the log has not
 * taken them yet (a backfill under way), which verify reports through the
 * checkpoint's tree_size rather than as a failure.
 */
export async function pageLeafCheck(
  fetchLeaves: (fromIndex: number, count: number) => Promise<string[]>,
  page: ReadonlyArray<{ seq: number }>,
): Promise<(row: { seq: number; hash: string }) => Promise<boolean>> {
  if (page.length === 0) return async () => false;
  const first = page[0].seq - 1;
  const leaves = await fetchLeaves(first, page[page.length - 1].seq - first);
  return async (row) => {
    const at = row.seq - 1 - first;
    if (at < 0 || at >= leaves.length) return false;
    return (await eventLeafHash(row.hash)) !== leaves[at];
  };
}
