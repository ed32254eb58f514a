/** Checks of one row and one link of a chain, shared by verify and the public receipt check. */
import type { ChainRow } from "../model/chain-row";
import { scratchEncoder } from "../lib/scratch-encoder";
import { hexEquals } from "../lib/crypto";
import { canonicalPayload, commitmentDigest, personalDataCleared, rowDigests } from "../sealing/payload";
import { bytesEqual } from "../tlog/encoding";
import { leafDigestOf, type LeafRun } from "../tlog/leaf-check";
import { gapIsAuthentic, gapsEndingAt, type GapRecord } from "./gap-records";
import { mayHoldLostSurrogate, rowAsHashed } from "./lone-surrogates";
import type { SigningKeyring } from "../sealing/signing-keys";
import type { ArchiveTier } from "../storage/archive-walk";
import { rowsBySeq } from "../model/row-keys";
import { overArms, type Arm } from "../model/periods";

/**
 * archive_damaged: an archived segment (or an export companion the ledger recorded for it) is missing or not the bytes recorded.
 * index_damaged: an intact event that lists, reads by id, receipts or search cannot find: a row standing in for its index entries
 * deleted or altered (model/stand-ins.ts), or its archived segment's index row no longer bounding it (storage/archive-walk.ts).
 */
export type FailureReason = "hash_mismatch" | "signature_mismatch" | "chain_broken" | "leaf_mismatch" | "archive_damaged" | "index_damaged";

/** The earlier end of a link: a row, or the chain start (seq 0, no hash). */
export interface LinkStart {
  seq: number;
  hash: string | null;
}
/** The later end: a row, or the recorded head seen as the row after it. */
export interface LinkEnd {
  seq: number;
  prev_hash: string | null;
}
export const CHAIN_START: LinkStart = { seq: 0, hash: null };

export interface Head {
  seq: number;
  hash: string | null;
}

/**
 * What verify anchors on, all of it from the ledger's own storage and none of
 * it from D1: the head, and the seq from which every row must be signed.
 */
export interface Anchor extends Head {
  signedFrom: number;
}

/**
 * An anonymized row stands only with one of the ledger's erasure records
 * behind it (same seq, same anonymized_at); otherwise its personal data was
 * deleted, not erased. `erasedAt` is the ledger's erasedAt() answer.
 */
export function erasureVouches(row: { seq: number; anonymized_at: string | null }, erasedAt: Record<number, string>): boolean {
  return row.anonymized_at === null || erasedAt[row.seq] === row.anonymized_at;
}

/** The ledger as verify consults it: its anchor, and its erasure records for the anonymized rows it meets. */
export interface LedgerView extends Anchor {
  erasedAt(seqs: number[]): Promise<Record<number, string>>;
  /** RFC 6962 leaf hashes of these leaves of the project's transparency log (leaf i is seq i + 1), 32 bytes each; see LeafRun. */
  leavesAt(indexes: number[]): Promise<LeafRun>;
  /** The newest checkpoint's tree, and whether the stored tiles rebuild its root. */
  checkpoint: { tree_size: number; root_hash: string; tiles_match_root: boolean };
  /** The head once every commit under way has finished: what tells an honest append past `seq` from a planted row. */
  committedHead?(): Promise<Head>;
  /** The project's cold tier (src/storage/archive-walk.ts): verify walks it with the hot rows. */
  archive?: ArchiveTier;
}

/** signature is null when the row carries none; leaf is false only when an expected leaf was given and differs. */
export interface RowCheck {
  hash: boolean;
  signature: boolean | null;
  leaf: boolean;
  /** The row checked out as hashed with an unpaired surrogate where D1 stored U+FFFD (src/chain/lone-surrogates.ts). */
  restoredSurrogate?: true;
}

/** checkRow encodes each row once, into one reused buffer (see scratchEncoder). */
const scratch = scratchEncoder();

const SIGNATURE = /^v(\d+):([0-9a-f]{64})$/;

/**
 * A row's payload carries its stored pii_commitment, the value reads and
 * exports show; with its salt present the clear personal data must recommit
 * to exactly that value, so editing either is caught. After erasure (salt
 * gone) the stored commitment stands alone, but only if the clear values are
 * gone too: personal data planted on an erased row cannot be vouched for.
 *
 * The same answers as rowCommitment(), chainHash(), checkSignature() and
 * eventLeafHash() (a unit test holds them together), with one encoding of the
 * payload, no per-row buffers and one await for every digest: this runs once
 * per event of a whole-chain verify. `leaf` is the row's expected RFC 6962
 * leaf hash in the project's log, when the caller has it.
 */
export async function checkRow(ring: SigningKeyring, row: ChainRow, leaf: Uint8Array | null = null): Promise<RowCheck> {
  const check = await checkStoredRow(ring, row, leaf);
  if (check.hash || !mayHoldLostSurrogate(row)) return check;
  // Accepted before unpaired surrogates were refused: D1 stored U+FFFD where the event was hashed with one.
  const original = await rowAsHashed(row);
  return original ? { ...(await checkStoredRow(ring, original, leaf)), restoredSurrogate: true } : check;
}

async function checkStoredRow(ring: SigningKeyring, row: ChainRow, leaf: Uint8Array | null): Promise<RowCheck> {
  const salted = row.pii_salt !== null;
  const unaccounted = !salted && !(row.anonymized_at !== null && personalDataCleared(row));
  if (unaccounted) return { hash: false, signature: row.signature === null ? null : false, leaf: true };
  const commitment = salted ? commitmentDigest(scratch, row.pii_salt!, row) : null;
  const match = row.signature === null ? null : SIGNATURE.exec(row.signature);
  const digests = rowDigests(scratch, row.prev_hash, canonicalPayload(row, row.pii_commitment), match ? ring.keys.get(Number(match[1])) : undefined);
  const leafDigest = leaf === null ? null : leafDigestOf(row.hash);
  const [c, h, m, l] = await Promise.all([commitment, digests.hash, digests.mac, leafDigest]);
  return {
    hash: hexEquals(h, row.hash) && (c === null || hexEquals(c, row.pii_commitment)),
    signature: row.signature === null ? null : m !== null && hexEquals(m, match![2]),
    leaf: leaf === null || (l !== null && bytesEqual(new Uint8Array(l), leaf)),
  };
}

type GapLookup = (lastHash: string) => Promise<GapRecord[]>;

/** Adjacent rows must link by hash; a hole in seq only when a signed gap record bridges exactly it. */
export async function checkLink(ring: SigningKeyring, start: LinkStart, end: LinkEnd, gaps: GapLookup) {
  if (end.seq === start.seq + 1) return { ok: end.prev_hash === start.hash, gap: null };
  if (end.seq <= start.seq || end.prev_hash === null) return { ok: false, gap: null };
  for (const gap of await gaps(end.prev_hash)) {
    const exact = gap.first_seq === start.seq + 1 && gap.last_seq === end.seq - 1 && gap.before_hash === start.hash;
    if (exact && (await gapIsAuthentic(ring, gap))) return { ok: true, gap };
  }
  return { ok: false, gap: null };
}

export function gapLookup(db: D1Database, projectId: string): GapLookup {
  return async (hash) => (await gapsEndingAt(db, projectId, [hash])).get(hash) ?? [];
}

type Neighbour = LinkStart & LinkEnd & { id: string; occurred_at: string };
const NEIGHBOUR = "SELECT id, seq, hash, prev_hash, occurred_at FROM ";

/** Of the arms' answers (an event is in one arm), the one of the highest seq, or with `lowest` the lowest. */
function nearestOf<R extends { seq: number }>(rows: Array<R | null>, lowest = false): R | null {
  let best: R | null = null;
  for (const r of rows) if (r !== null && (best === null || (lowest ? r.seq < best.seq : r.seq > best.seq))) best = r;
  return best;
}

/**
 * The nearest row before seq (it may sit across a purged hole), in any of the shard's arms (model/periods.ts):
 * `arms` as the caller knows them, or none to list them now.
 */
export async function rowBefore(db: D1Database, projectId: string, seq: number, arms?: Arm[]): Promise<Neighbour | null> {
  const sql = NEIGHBOUR + rowsBySeq({ project: "?1", lo: "0", hi: "?2 - 1", desc: true, limit: "1" });
  return nearestOf(await overArms(db, (arm) => arm.prepare(sql).bind(projectId, seq).first<Neighbour>(), arms));
}

/** The nearest row after seq, up to the head (rows past it are not part of the chain yet), in any arm. */
export async function rowAfter(db: D1Database, projectId: string, seq: number, headSeq: number, arms?: Arm[]): Promise<Neighbour | null> {
  const sql = NEIGHBOUR + rowsBySeq({ project: "?1", lo: "?2 + 1", hi: "?3", limit: "1" });
  return nearestOf(await overArms(db, (arm) => arm.prepare(sql).bind(projectId, seq, headSeq).first<Neighbour>(), arms), true);
}

/** The newest row past the ledger's head, in any arm (verify asks the ledger whether it committed it). */
export async function newestRowPastHead(db: D1Database, projectId: string, headSeq: number, arms?: Arm[]) {
  const sql = `SELECT id, seq, occurred_at FROM ${rowsBySeq({ project: "?1", lo: "?2 + 1", hi: null, desc: true, limit: "1" })}`;
  return nearestOf(await overArms(db, (arm) => arm.prepare(sql).bind(projectId, headSeq).first<{ id: string; seq: number; occurred_at: string }>(), arms));
}
