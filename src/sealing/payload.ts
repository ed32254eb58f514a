/**
 * src/sealing/: how an event is sealed, as pure functions a third party can
 * re-run: RFC 8785 canonical JSON (canonical.ts), the canonical payload with its
 * salted personal-data commitment, the chain hash and the HMAC signature (this
 * file), the versioned HMAC keys (signing-keys.ts) and the log's Ed25519 keys
 * (receipt-signing.ts). No bindings; start here.
 */
import { canonicalize } from "./canonical";
import { sha256Hex } from "../lib/crypto";
import type { scratchEncoder } from "../lib/scratch-encoder";
import { sign, type SigningKeyring } from "./signing-keys";

/** The personal fields that enter the chain only as a salted commitment. */
export interface PersonalData {
  actor_id: string | null;
  actor_name: string | null;
  actor_email: string | null;
  ip_address: string | null;
  user_agent: string | null;
}

/** Stored, non-derived fields of an event that the hash and signature cover. */
export interface ChainFields {
  id: string;
  project_id: string;
  seq: number;
  action: string;
  organization: string | null;
  actor_type: string | null;
  /** Canonical (RFC 8785) JSON text of the targets array, as stored. */
  targets: string;
  /** Canonical (RFC 8785) JSON text of the metadata object, as stored. */
  metadata: string;
  occurred_at: string;
  /**
   * The catalog's fields (issue 35): canonical JSON text of the before/after
   * array, the schema version checked at ingest and whether the event passed
   * it (1 or 0). Each enters the payload only when present (not null), so
   * every hash made before them stays valid. Rows read from segments archived
   * before them lack the keys: undefined counts as absent.
   */
  changes?: string | null;
  schema_version?: number | null;
  schema_valid?: number | null;
}

export const PAYLOAD_VERSION = 1;

export function piiCommitment(salt: string, pii: PersonalData): Promise<string> {
  return sha256Hex(salt + personalDataText(pii));
}

const textOrNull = (v: unknown) => v === null || typeof v === "string";

/**
 * The RFC 8785 text piiCommitment() digests: keys in code-unit order, built by
 * hand (every event of a batch needs one) whenever every value is text or
 * null; anything else goes through canonicalize(), which a unit test holds it to.
 */
export function personalDataText(pii: PersonalData): string {
  const { actor_email, actor_id, actor_name, ip_address, user_agent } = pii;
  if (!(textOrNull(actor_email) && textOrNull(actor_id) && textOrNull(actor_name) && textOrNull(ip_address) && textOrNull(user_agent))) {
    return canonicalize({ actor_email, actor_id, actor_name, ip_address, user_agent });
  }
  const s = JSON.stringify;
  return (
    `{"actor_email":${s(actor_email)},"actor_id":${s(actor_id)},"actor_name":${s(actor_name)},` +
    `"ip_address":${s(ip_address)},"user_agent":${s(user_agent)}}`
  );
}

/**
 * The RFC 8785 text of the payload. Built by hand because targets and metadata
 * are already stored canonical; the unit tests prove it equals canonicalize()
 * of the parsed object, which is how a third party recomputes it.
 */
export function canonicalPayload(e: ChainFields, pii: string): string {
  const s = JSON.stringify;
  // Keys in code-unit order: changes sorts after actor_type, schema_valid and schema_version before seq.
  const changes = e.changes == null ? "" : `"changes":${e.changes},`;
  const schema = e.schema_version == null ? "" : `"schema_valid":${e.schema_valid === 1},"schema_version":${e.schema_version},`;
  return (
    `{"action":${s(e.action)},"actor_type":${s(e.actor_type)},${changes}"id":${s(e.id)},` +
    `"metadata":${e.metadata},"occurred_at":${s(e.occurred_at)},"organization":${s(e.organization)},` +
    `"pii":${s(pii)},"project_id":${s(e.project_id)},${schema}"seq":${e.seq},"targets":${e.targets},` +
    `"v":${PAYLOAD_VERSION}}`
  );
}

type ScratchEncoder = ReturnType<typeof scratchEncoder>;

/**
 * SHA-256 of salt || personal-data text, as piiCommitment() computes it, the
 * text encoded into `scratch` (sealing and verify run one per event). Web
 * Crypto reads its input when called, so `scratch` is free again on return.
 */
export function commitmentDigest(scratch: ScratchEncoder, salt: string, pii: PersonalData): Promise<ArrayBuffer> {
  return crypto.subtle.digest("SHA-256", scratch.bytes(0, scratch.encodeAt(personalDataText(pii), scratch.encodeAt(salt, 0))));
}

/**
 * A row's hash (SHA-256 of prev_hash || payload, as chainHash()) and, with a
 * key, its HMAC (of the payload alone, as sign()), both started from one
 * encoding of the texts into `scratch`, which is free again on return.
 */
export function rowDigests(scratch: ScratchEncoder, prevHash: string | null, payload: string, key: CryptoKey | undefined) {
  const offset = prevHash === null ? 0 : scratch.encodeAt(prevHash, 0);
  const end = scratch.encodeAt(payload, offset);
  return {
    hash: crypto.subtle.digest("SHA-256", scratch.bytes(0, end)),
    mac: key === undefined ? null : crypto.subtle.sign("HMAC", key, scratch.bytes(offset, end)),
  };
}

export function chainHash(prevHash: string | null, payload: string): Promise<string> {
  return sha256Hex((prevHash ?? "") + payload);
}

/** Seals a new row: its hash links it to prev_hash, its signature uses the newest key. */
export async function sealRow<T extends ChainFields & { pii_commitment: string; prev_hash: string | null }>(
  row: T,
  ring: SigningKeyring,
): Promise<T & { hash: string; signature: string }> {
  const payload = canonicalPayload(row, row.pii_commitment);
  return { ...row, hash: await chainHash(row.prev_hash, payload), signature: await sign(ring, payload) };
}

/** Whether every clear personal field is gone, as erasure leaves a row. */
export function personalDataCleared(row: PersonalData): boolean {
  return row.actor_id === null && row.actor_name === null && row.actor_email === null && row.ip_address === null && row.user_agent === null;
}

/**
 * The commitment a row's payload must carry. With its salt present the row's
 * clear personal data is recommitted, so editing it is caught. After erasure
 * (salt gone) the stored commitment stands in, but only if the clear values are
 * gone too: personal data planted on an erased row cannot be vouched for.
 */
export async function rowCommitment(
  row: PersonalData & { pii_salt: string | null; pii_commitment: string },
): Promise<string | null> {
  if (row.pii_salt !== null) return piiCommitment(row.pii_salt, row);
  return personalDataCleared(row) ? row.pii_commitment : null;
}
