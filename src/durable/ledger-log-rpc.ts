import { DurableObject } from "cloudflare:workers";
import type { Head } from "../chain/chain-check";
import { loadVerifyCheckpoint, storeVerifyCheckpoint, type VerifyCheckpoint } from "../chain/verify-checkpoint";
import type { LeafRun } from "../tlog/leaf-check";
import { logInfo } from "../log/log-info";
import type { ProjectLog } from "../log/project-log";

/**
 * The read side of a project's ledger: its transparency log (public tiles and
 * checkpoints, proofs, what evidence exports pin) and what verify asks of it.
 * None of it takes the commit lock or writes the chain; ProjectLedger, the
 * writer, extends it, so both are one Durable Object and one storage.
 */
export abstract class LedgerLogRpc extends DurableObject<Env> {
  /** The head as this ledger committed it. */
  protected current: Head = { seq: 0, hash: null };
  /** The project's transparency log: its tree lives in this object's storage, next to the head. */
  protected log!: ProjectLog;

  /** GET /v1/log: the log's identity, published tree and build status. */
  logInfo() {
    return logInfo(this.log, this.env, this.current);
  }

  /** For the public address `logId`: the newest checkpoint; mine false when that address is not this log's. */
  logCheckpoint(logId: string) {
    return this.log.publicCheckpoint(logId);
  }

  /** For the public address `logId`: tile bytes of the published tree; mine false when not this log's. */
  logTile(logId: string, level: number, index: number, width: number) {
    return this.log.publicTile(logId, level, index, width);
  }

  /** The event with `seq` as tlog-proof text against the newest checkpoint; null when not in the published tree. */
  logInclusion(seq: number) {
    return this.log.inclusion(seq);
  }

  /** What an evidence export pins (src/jobs/evidence.ts): the published tree's size and its signed checkpoint; null without a signing key. */
  evidenceAnchor() {
    return this.log.evidenceAnchor();
  }

  /** Multiproof hashes for leaves `indexes` of the published tree of `size` (src/tlog/multiproof.ts). */
  logMultiproof(size: number, indexes: number[]): Promise<Uint8Array | null> {
    return this.log.multiproof(size, indexes);
  }

  /** Consistency proof between published sizes; null when out of range. */
  logConsistency(from: number, to?: number) {
    return this.log.consistency(from, to);
  }

  /** Where an incremental verify starts (src/chain/verify-checkpoint.ts); null before the first whole verify that came out ok. */
  verifyCheckpoint(): VerifyCheckpoint | null {
    return loadVerifyCheckpoint(this.ctx.storage.kv);
  }

  /** Kept only when newer than the stored one and not past this ledger's head. */
  recordVerifyCheckpoint(checkpoint: VerifyCheckpoint): boolean {
    return storeVerifyCheckpoint(this.ctx.storage.kv, checkpoint, this.current.seq);
  }

  /** For verify: leaf hashes of these indexes only, so a windowed page never asks for the span between its rows. */
  leavesAt(indexes: number[]): Promise<LeafRun> {
    return this.log.leavesAt(indexes);
  }

  /** For verify: the published tree's size and root (base64) as the checkpoint signs it, checked against the stored tiles. */
  checkpointAnchor(publishedCopies = true) {
    return this.log.anchor(publishedCopies);
  }

}
