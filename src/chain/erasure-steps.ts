
import { pendingDelete } from "../model/pending-erasures";
import { armDb, shardArms } from "../model/periods";
import { compactSearchIndex } from "../model/search-index";
import { actorProbe, dropObjects, prepareRewrite, segmentsToErase, switchSegment } from "../storage/archive-erase";
import { ArchiveDamagedError, type ArchivedRow } from "../storage/archive-segments";
import { restartCopy } from "../storage/shard-move";
import type { AuditOutbox } from "./audit-outbox";
import { isErasable } from "../model/erasable";
import { erasedEvent, ERASURE_BATCH, scrubHotBatch } from "./erasure";
import type { ErasureRecords } from "./erasure-records";
import type { ErasurePhase, ErasureState, RunningErasure } from "./erasure-running";
import type { LegalHolds } from "./legal-holds";
import { loadKeyring } from "../sealing/signing-keys";
import { deleteStagedExports } from "../storage/staged-exports";
import type { LedgerHost } from "../storage/ledger-host";

/**
 * An accepted erasure applied in bounded steps, each one call of its job
 * (src/jobs/erasure-job.ts) into the ledger, each its own invocation:
 * - hot: up to `batchesPerStep` batches of rows, the commit lock taken per
 *   batch (4 D1 queries each), so appends commit between batches;
 * - archive: segments in seq order, each read, scrubbed and written again
 *   outside the lock, the lock held only to switch its index row
 *   (src/storage/archive-erase.ts); at most one rewrite per step, and at most
 *   `segmentsPerStep` segments read;
 * - settle: the erasure record finished and signed with its count, its
 *   self-audit event settled (completed) and appended;
 * - cleanup: the search index compacted (bounded per step), staged exports
 *   and job files deleted, the pending entry dropped: reads stop applying it.
 * Progress lives in the ledger's storage (erasure-running.ts) and every step
 * is idempotent, so a step repeated after a crash duplicates and loses
 * nothing; the count is the erasure record's covered rows, each once.
 */
/** The ledger an erasure step runs in (src/storage/ledger-host.ts), and the erasure state it keeps. */
export type ErasureHost = LedgerHost & {
  records: ErasureRecords;
  outbox: AuditOutbox;
  holds: LegalHolds;
  /** The companions of a segment this step rendered and switched in (the ledger vouches for them to exports). */
  recordCompanions(segmentSha256: string, hashes: { csv: string; json: string }): void;
  drainAudit(): Promise<void>;
  deleteJobFiles(db: D1Database): Promise<unknown>;
};

export interface ErasureStepResult {
  done: boolean;
  phase: ErasurePhase;
  /** Rows anonymized so far. */
  anonymized: number;
  /** The longest this step held the commit lock, in ms (what appends may have waited). */
  lockMs: number;
}

export interface ErasureTuning {
  batch: number;
  batchesPerStep: number;
  segmentsPerStep: number;
  compactSteps: number;
}

/** Worst step, with no period: 50 batches (4 D1 queries each) then the cleanup (2 per compaction step, 3 more): about 510 D1 queries. Each period adds a read to every batch and 3 to the cleanup. */
/** Segment index rows (with summaries) looked at per segment read: skipping one costs an HMAC, not an R2 read. */
const SUMMARIES_PER_READ = 25;
const DEFAULTS: ErasureTuning = { batch: ERASURE_BATCH, batchesPerStep: 50, segmentsPerStep: 20, compactSteps: 150 };
/** Tests only: smaller steps (more of them), and a fault thrown once at a phase, through the ledger's storage. */
export const TUNING_KEY = "erasure_tuning";
export const FAULT_KEY = "erasure_fault";

function fault(kv: SyncKvStorage, at: "hot" | "archive" | "settle") {
  if (kv.get<string>(FAULT_KEY) !== at) return;
  kv.delete(FAULT_KEY);
  throw new Error(`erasure step: test fault at ${at}`);
}

/** Steps of one erasure never overlap (a Workflow retry may arrive while the step it retries still runs). */
const inFlight = new Map<string, Promise<unknown>>();

export function erasureStep(host: ErasureHost, erasureId: number): Promise<ErasureStepResult> {
  const key = `${host.projectId}:${erasureId}`;
  const run = (inFlight.get(key) ?? Promise.resolve()).then(() => step(host, erasureId));
  const settled = run.catch(() => {});
  inFlight.set(key, settled);
  void settled.then(() => inFlight.get(key) === settled && inFlight.delete(key));
  return run;
}

async function step(host: ErasureHost, erasureId: number): Promise<ErasureStepResult> {
  const { records } = host;
  const kv = host.storage.kv;
  const r = records.running.get(erasureId);
  if (!r) {
    // Already finished (a repeated last step): its record says how many.
    const record = records.list().find((e) => e.id === erasureId);
    return { done: true, phase: "done", anonymized: record?.count ?? 0, lockMs: 0 };
  }
  const tuning = { ...DEFAULTS, ...kv.get<Partial<ErasureTuning>>(TUNING_KEY) };
  let lockMs = 0;
  const locked = <T>(work: () => Promise<T>) =>
    host.exclusive(async () => {
      const start = Date.now();
      try {
        return await work();
      } finally {
        lockMs = Math.max(lockMs, Date.now() - start);
      }
    });
  const state = { ...r.state };
  const save = (next: Partial<ErasureState>) => {
    Object.assign(state, next);
    records.running.advance(erasureId, state);
  };
  const result = (done = false) => ({ done, phase: state.phase, anonymized: records.covered(erasureId), lockMs });
  const req = { projectId: host.projectId, by: r.by, value: r.value, organization: r.organization };

  // A phase that ends inside its budget hands over to the next in the same step: a small erasure is one step.
  if (state.phase === "hot") {
    // Listed once a step: the rows it covers were written before it was accepted, into arms there then.
    const arms = await shardArms(host.db());
    for (let i = 0; ; i++) {
      if (i === tuning.batchesPerStep) return result();
      const n = await locked(() => scrubHotBatch(host.db(), records, req, r.erased_at, erasureId, r.through_seq, tuning.batch, arms));
      fault(kv, "hot");
      if (n === 0) break;
    }
    save({ phase: "archive" });
  }
  if (state.phase === "archive") {
    if (!(await archiveStep({ ...host, exclusive: locked }, r, state, save, tuning))) return result();
  }
  if (state.phase === "settle") {
    const count = records.covered(erasureId);
    const ring = await loadKeyring(host.env.SIGNING_KEYS);
    fault(kv, "settle");
    await locked(async () => {
      await records.finish(ring, erasureId, count, () => {
        host.outbox.settle(r.outbox_id, erasedEvent(r.audit.by, r.audit.origin, r, erasureId, count));
        if (r.by === "id") host.holds.forgetActor(r.value);
        save({ phase: "cleanup" });
      });
      // A shard move may have copied the rows before they were scrubbed.
      restartCopy(kv);
    });
    await host.drainAudit();
  }
  // cleanup: erased words leave the index's data pages, not only its live entries.
  const db = host.db();
  if (!state.compacted && records.covered(erasureId) > 0) {
    if (!(await compactArms(db, tuning.compactSteps))) return result();
  }
  save({ compacted: true });
  // Staged exports and job files may hold the erased values in clear.
  await deleteStagedExports(host.env, host.projectId);
  await host.deleteJobFiles(db);
  await pendingDelete(db, host.projectId, erasureId).run();
  records.running.remove(erasureId);
  state.phase = "done";
  return result(true);
}

/**
 * Every arm's search index compacted (each period's holds its rows' erased
 * words), in arm order, within `steps` steps in all. An arm compacted
 * already takes one, and each is given one at least, so every call gets
 * further even with more arms than steps. True once all are done.
 */
async function compactArms(db: D1Database, steps: number): Promise<boolean> {
  let left = steps;
  for (const n of await shardArms(db)) {
    const step = await compactSearchIndex(armDb(db, n), 1000, Math.max(left, 1));
    if (!step.done) return false;
    left -= step.steps;
  }
  return true;
}

/** True when the archive is done (phase settle); false when this step's share is (one rewrite, or segmentsPerStep read). */
async function archiveStep(host: ErasureHost, r: RunningErasure, state: ErasureState, save: (s: Partial<ErasureState>) => void, tuning: ErasureTuning) {
  // Summaries let most segments go unread: look at many, read at most segmentsPerStep.
  const segments = await segmentsToErase(host.db(), host.projectId, state.segmentAfter, r.through_seq, tuning.segmentsPerStep * SUMMARIES_PER_READ);
  if (segments.length === 0) {
    save({ phase: "settle" });
    return true;
  }
  const covers = (row: ArchivedRow) =>
    row.seq <= r.through_seq &&
    (r.by === "id" ? row.actor_id : row.actor_email) === r.value &&
    (r.organization === null || row.organization === r.organization) &&
    isErasable(row.action);
  let reads = 0;
  const probe = actorProbe(host.env, r.by, r.value, r.organization);
  for (const segment of segments) {
    if (!(await probe.admits(segment.summary))) {
      save({ segmentAfter: segment.first_seq });
      continue;
    }
    if (reads++ === tuning.segmentsPerStep) return false;
    let rewrite;
    try {
      rewrite = await prepareRewrite(host.env, segment, covers, r.erased_at, r.erasure_id);
    } catch (error) {
      // A damaged segment serves nothing (reads refuse it); verify reports it. The erasure goes on.
      if (!(error instanceof ArchiveDamagedError)) throw error;
      console.warn(`erasure ${r.erasure_id}: ${error.message}; skipped`);
      rewrite = null;
    }
    if (rewrite) {
      fault(host.storage.kv, "archive");
      const done = rewrite;
      const switched = await host.exclusive(async () => {
        host.records.cover(r.erasure_id, done.seqs);
        const ok = await switchSegment(host.db(), done);
        const s = done.next.segment;
        if (ok) host.recordCompanions(s.sha256, { csv: s.csv_sha256!, json: s.json_sha256! });
        return ok;
      });
      await dropObjects(host.env, rewrite, switched);
      // Rewritten meanwhile (another erasure, a purge): the next step reads it again as it is now.
      if (switched) save({ segmentAfter: segment.first_seq });
      return false;
    }
    save({ segmentAfter: segment.first_seq });
  }
  return false;
}
