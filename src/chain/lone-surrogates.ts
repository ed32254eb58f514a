/**
 * Rows written before ingest refused unpaired UTF-16 surrogates.
 *
 * Such an event was hashed as sent (JSON.stringify writes a lone surrogate as
 * the escape `\udXXX`), but D1 stores text as UTF-8 and wrote U+FFFD in its
 * place, so the stored row no longer matches its own hash. The hash still
 * pins what was sent: the row stands when putting one unpaired surrogate back
 * where D1 wrote U+FFFD reproduces its stored digests exactly. Only that one
 * substitution (of one run of U+FFFD) is tried per digest (the personal-data commitment, and the
 * payload), so nothing but this loss can ever pass: any other edit still
 * fails. A digest with two or more such characters would need millions of
 * tries and is left failing (src/docs/api.md, GET /v1/events/verify).
 */
import { sha256Hex } from "../lib/crypto";
import { canonicalPayload, chainHash, personalDataText } from "../sealing/payload";
import type { ChainRow } from "../model/chain-row";

const REPLACEMENT = "\uFFFD";
/** Text columns under the salted commitment, and those in the payload itself. */
const PERSONAL = ["actor_id", "actor_name", "actor_email"] as const;
const PAYLOAD = ["action", "organization", "actor_type"] as const;
type TextColumn = (typeof PERSONAL)[number] | (typeof PAYLOAD)[number];

/** Every code unit D1 may have turned into U+FFFD: U+D800 to U+DFFF. */
const SURROGATES = Array.from({ length: 0x800 }, (_, i) => String.fromCharCode(0xd800 + i));

export function mayHoldLostSurrogate(row: ChainRow): boolean {
  for (const column of [...PAYLOAD, ...PERSONAL]) if (row[column]?.includes(REPLACEMENT)) return true;
  return false;
}

/**
 * The one run of U+FFFD among these columns, or null when there is none or
 * more than one. Depending on how the surrogate reached SQLite it is one U+FFFD
 * or three (its three WTF-8 bytes each decoded as one): both are tried.
 */
function onlyRun(row: ChainRow, columns: readonly TextColumn[]): { column: TextColumn; at: number; length: number } | null {
  let found: { column: TextColumn; at: number; length: number } | null = null;
  for (const column of columns) {
    const text = row[column] ?? "";
    for (let at = text.indexOf(REPLACEMENT); at !== -1; ) {
      let end = at;
      while (text[end] === REPLACEMENT) end++;
      if (found || (end - at !== 1 && end - at !== 3)) return null;
      found = { column, at, length: end - at };
      at = text.indexOf(REPLACEMENT, end);
    }
  }
  return found;
}

/** The row with the surrogate that makes `digest(row)` equal `expected`, or null. */
async function restoreOne(row: ChainRow, columns: readonly TextColumn[], expected: string, digest: (r: ChainRow) => Promise<string>): Promise<ChainRow | null> {
  const run = onlyRun(row, columns);
  if (!run) return null;
  const text = row[run.column]!;
  const candidates = SURROGATES.map((s) => ({ ...row, [run.column]: text.slice(0, run.at) + s + text.slice(run.at + run.length) }));
  const digests = await Promise.all(candidates.map(digest));
  const hit = digests.indexOf(expected);
  return hit === -1 ? null : candidates[hit];
}

/**
 * The row as it was hashed, when the only difference from the stored one is
 * an unpaired surrogate D1 replaced with U+FFFD; null otherwise. The caller
 * checks the returned row in full (hash, signature, leaf) as any other.
 */
export async function rowAsHashed(row: ChainRow): Promise<ChainRow | null> {
  let restored = row;
  if (row.pii_salt !== null && (await sha256Hex(row.pii_salt + personalDataText(row))) !== row.pii_commitment) {
    const found = await restoreOne(row, PERSONAL, row.pii_commitment, (r) => sha256Hex(r.pii_salt! + personalDataText(r)));
    if (!found) return null;
    restored = found;
  }
  const payloadHash = (r: ChainRow) => chainHash(r.prev_hash, canonicalPayload(r, r.pii_commitment));
  if ((await payloadHash(restored)) !== row.hash) {
    const found = await restoreOne(restored, PAYLOAD, row.hash, payloadHash);
    if (!found) return null;
    restored = found;
  }
  return restored === row ? null : restored;
}
