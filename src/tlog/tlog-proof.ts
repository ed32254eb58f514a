/**
 * C2SP tlog-proof (c2sp.org/tlog-proof), an offline-verifiable proof that an
 * entry is in a log:
 *
 *   c2sp.org/tlog-proof@v1
 *   [extra <base64>]
 *   index <decimal>
 *   <base64 inclusion proof hash, leaf's sibling first>...
 *   <empty line>
 *   <signed checkpoint, verbatim>
 */
import { type Checkpoint, verifyCheckpoint } from "./checkpoint.ts";
import { LogFormatError, base64Decode, base64DecodeHash, base64Encode, isCount, parseDecimal } from "./encoding.ts";
import { leafHash as hashLeaf } from "./merkle.ts";
import type { NoteSignature, NoteVerifier } from "./note.ts";
import { verifyInclusion } from "./proofs.ts";

export const TLOG_PROOF_HEADER = "c2sp.org/tlog-proof@v1";
/** An inclusion proof in a tree of at most 2^64 leaves has at most 64 hashes. */
const MAX_PROOF_HASHES = 64;

export interface TlogProof {
  index: number;
  /** Inclusion proof hashes, from the leaf's sibling up to the root's child. */
  proof: Uint8Array[];
  /** The signed checkpoint note, verbatim (cosignatures included). */
  checkpoint: string;
  /** Opaque, unauthenticated application data. */
  extra?: Uint8Array;
}

/** Either the leaf's data (hashed here) or its RFC 6962 leaf hash. */
export type LeafInput = { leafData: Uint8Array } | { leafHash: Uint8Array };

export type TlogProofVerification =
  | { ok: true; index: number; checkpoint: Checkpoint; verified: NoteSignature[]; unverified: NoteSignature[]; extra?: Uint8Array }
  | { ok: false; reason: string };

export function formatTlogProof(p: TlogProof): string {
  if (!isCount(p.index)) throw new LogFormatError("invalid index");
  if (p.proof.some((h) => h.length !== 32)) throw new LogFormatError("proof hashes must be 32 bytes");
  if (!p.checkpoint.endsWith("\n")) throw new LogFormatError("checkpoint must end in a newline");
  const lines = [TLOG_PROOF_HEADER];
  if (p.extra !== undefined) lines.push(`extra ${base64Encode(p.extra)}`);
  lines.push(`index ${p.index}`, ...p.proof.map(base64Encode), "");
  return `${lines.join("\n")}\n${p.checkpoint}`;
}

/** Strict parse; the checkpoint is returned unverified. Throws LogFormatError. */
export function parseTlogProof(text: string): TlogProof {
  const lines = text.split("\n");
  if (lines[0] !== TLOG_PROOF_HEADER) throw new LogFormatError("not a c2sp.org/tlog-proof@v1 proof");
  let at = 1;
  let extra: Uint8Array | undefined;
  if (lines[at]?.startsWith("extra ")) extra = base64Decode(lines[at++].slice("extra ".length));
  if (!lines[at]?.startsWith("index ")) throw new LogFormatError("missing index line");
  const index = parseDecimal(lines[at++].slice("index ".length), "index");
  const proof: Uint8Array[] = [];
  for (; at < lines.length && lines[at] !== ""; at++) {
    if (proof.length === MAX_PROOF_HASHES) throw new LogFormatError("too many proof hashes");
    proof.push(base64DecodeHash(lines[at]));
  }
  if (at >= lines.length) throw new LogFormatError("missing blank line before the checkpoint");
  const checkpoint = lines.slice(at + 1).join("\n");
  if (checkpoint.length === 0) throw new LogFormatError("missing checkpoint");
  return extra === undefined ? { index, proof, checkpoint } : { index, proof, checkpoint, extra };
}

/**
 * Verifies a tlog-proof for a leaf against the log's key: the checkpoint's
 * signature and origin (see verifyCheckpoint), then the inclusion proof
 * against its root. Throws only for an unusable key; everything about the
 * proof text comes back as { ok: false, reason }.
 */
export async function verifyTlogProof(
  text: string,
  leaf: LeafInput,
  key: string | NoteVerifier,
): Promise<TlogProofVerification> {
  let parsed: TlogProof;
  try {
    parsed = parseTlogProof(text);
  } catch (err) {
    return { ok: false, reason: `malformed proof: ${(err as Error).message}` };
  }
  const cp = await verifyCheckpoint(parsed.checkpoint, key);
  if (!cp.ok) return cp;
  const hash = "leafHash" in leaf ? leaf.leafHash : await hashLeaf(leaf.leafData);
  const { index, proof, extra } = parsed;
  if (index >= cp.checkpoint.size) return { ok: false, reason: `index ${index} is not in a tree of ${cp.checkpoint.size}` };
  if (!(await verifyInclusion(hash, index, cp.checkpoint.size, proof, cp.checkpoint.rootHash))) {
    return { ok: false, reason: "inclusion proof does not match the checkpoint root" };
  }
  const result = { ok: true as const, index, checkpoint: cp.checkpoint, verified: cp.verified, unverified: cp.unverified };
  return extra === undefined ? result : { ...result, extra };
}
