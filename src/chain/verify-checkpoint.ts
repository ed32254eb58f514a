/**
 * The checkpoint an incremental verify starts from: where the last whole-
 * history verify that came out ok stopped, and what it counted. Kept in the
 * ledger's own storage (never D1): someone who can write D1 must not be able
 * to move it past rows they edited.
 */
import { base64Decode } from "../tlog/encoding";
import { verifyConsistency } from "../tlog/proofs";

export interface VerifyCheckpoint {
  /** The head the verify anchored on: every row up to it checked out and the chain ended there. */
  seq: number;
  hash: string | null;
  /** The transparency log's tree the rows were checked against (tree_size >= seq). */
  tree_size: number;
  root_hash: string;
  verified: number;
  anonymized: number;
  unsigned: number;
  restored_surrogates: number;
  /** Retention gaps the chain crossed up to seq. */
  gaps: number;
  /** Events those gaps purged (absent in checkpoints stored before it was counted). */
  purged?: number;
  at: string;
}

const KEY = "verify_checkpoint";

export function loadVerifyCheckpoint(kv: SyncKvStorage): VerifyCheckpoint | null {
  return kv.get<VerifyCheckpoint>(KEY) ?? null;
}

/** Kept only when it is newer than the stored one and not past the ledger's head (a checkpoint of rows it never committed is refused). */
export function storeVerifyCheckpoint(kv: SyncKvStorage, checkpoint: VerifyCheckpoint, headSeq: number): boolean {
  const stored = loadVerifyCheckpoint(kv);
  if (checkpoint.seq > headSeq || checkpoint.tree_size < checkpoint.seq) return false;
  if (stored && (stored.seq > checkpoint.seq || stored.tree_size > checkpoint.tree_size)) return false;
  kv.put(KEY, checkpoint);
  return true;
}

/** What the ledger's log answers for a consistency proof (logConsistency). */
type ConsistencySource = (from: number, to: number) => Promise<{ proof: string[] } | null>;

/**
 * Whether the tree verify checks against now extends the checkpoint's tree:
 * every leaf the earlier verify relied on is still where it was, so the rows
 * it checked need not be read again (RFC 9162 consistency proof).
 */
export async function treeExtends(checkpoint: VerifyCheckpoint, now: { tree_size: number; root_hash: string }, proofOf: ConsistencySource): Promise<boolean> {
  if (now.tree_size < checkpoint.tree_size) return false;
  const answer = await proofOf(checkpoint.tree_size, now.tree_size);
  if (!answer) return false;
  try {
    const proof = answer.proof.map(base64Decode);
    return await verifyConsistency(checkpoint.tree_size, now.tree_size, proof, base64Decode(checkpoint.root_hash), base64Decode(now.root_hash));
  } catch {
    // A malformed stored root or proof proves nothing.
    return false;
  }
}
