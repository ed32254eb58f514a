import { canonicalize } from "../sealing/canonical";
import type { AppliedRule } from "./retention-rules";
import { checkSignature, sign, type SigningKeyring } from "../sealing/signing-keys";

/**
 * Every maximal hole retention leaves in a chain is described by exactly one
 * signed gap record, so verify can bridge it and nothing else.
 */
export interface GapRecord {
  id: number;
  project_id: string;
  before_hash: string | null;
  last_hash: string;
  first_seq: number;
  last_seq: number;
  purged_count: number;
  purged_at: string;
  signature: string | null;
  /** JSON text of AppliedRule[]; null on records written before purges named their rules. */
  rules: string | null;
}

export type UnsignedGap = Omit<GapRecord, "id" | "signature">;

/** v2 records name the rules and cutoffs applied; v1 records (no rules) keep verifying as they were signed. */
export function gapPayload(g: UnsignedGap): string {
  const common = {
    before_hash: g.before_hash,
    first_seq: g.first_seq,
    last_hash: g.last_hash,
    last_seq: g.last_seq,
    project_id: g.project_id,
    purged_at: g.purged_at,
    purged_count: g.purged_count,
  };
  if (g.rules === null) return canonicalize({ ...common, type: "witness.retention_gap.v1" });
  return canonicalize({ ...common, rules: JSON.parse(g.rules) as AppliedRule[], type: "witness.retention_gap.v2" });
}

export function signGap(ring: SigningKeyring, gap: UnsignedGap): Promise<string> {
  return sign(ring, gapPayload(gap));
}

export function gapIsAuthentic(ring: SigningKeyring, gap: GapRecord): Promise<boolean> {
  try {
    return checkSignature(ring, gapPayload(gap), gap.signature);
  } catch {
    // Unparseable rules text was not written by a purge.
    return Promise.resolve(false);
  }
}

/** The rules a record names, for verify's report; empty on v1 records. */
export function gapRules(gap: GapRecord): AppliedRule[] {
  if (gap.rules === null) return [];
  try {
    return JSON.parse(gap.rules) as AppliedRule[];
  } catch {
    return [];
  }
}

/** Gap records ending in any of these hashes, grouped by last_hash. */
export async function gapsEndingAt(db: D1Database, projectId: string, hashes: string[]): Promise<Map<string, GapRecord[]>> {
  const out = new Map<string, GapRecord[]>();
  if (hashes.length === 0) return out;
  const { results } = await db
    .prepare("SELECT * FROM retention_gaps WHERE project_id = ? AND last_hash IN (SELECT value FROM json_each(?))")
    .bind(projectId, JSON.stringify([...new Set(hashes)]))
    .all<GapRecord>();
  for (const gap of results) out.set(gap.last_hash, [...(out.get(gap.last_hash) ?? []), gap]);
  return out;
}
