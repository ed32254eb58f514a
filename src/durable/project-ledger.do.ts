/**
 * src/durable/: the runtime. Durable Object and Workflow classes compose the
 * layers below and hold no logic of their own. Start here: ProjectLedger (this
 * file), the only writer of a project's chain and log; job-workflow.ts runs
 * jobs; stream-delivery.do.ts, verify-chunk.do.ts, export-part.do.ts and
 * rate-limiter.do.ts each host one service's state or work.
 */
import { RateWindows, type RateState } from "../lib/rate-window";
import type { Anchor, Head } from "../chain/chain-check";
import { unpackEvents, type PackedEvents } from "../chain/ledger";
import { AuditOutbox } from "../chain/audit-outbox";
import type { ErasureAnswer } from "../chain/erasure";
import { ErasureCoordinator } from "../chain/erasure-coordinator";
import type { ErasureStepResult } from "../chain/erasure-steps";
import { ErasureRecords } from "../chain/erasure-records";
import { GroupCommit, MAX_GROUP_EVENTS } from "../chain/group-commit";
import { recoverHead } from "../chain/head-recovery";
import { IdempotentAppends, type AppendRequest, type AppendResult } from "../chain/idempotent-appends";
import { LegalHolds, type LegalHold } from "../chain/legal-holds";
import { purgeStep } from "../chain/retention";
import { purgeRun, retentionAlarm } from "../chain/retention-upkeep";
import { changeRetention, retentionRules, retentionState, type RetentionChange, type RetentionState } from "../chain/retention-plan";
import type { RetentionRule } from "../chain/retention-rules";
import type { AuditActor, AuditOrigin } from "../chain/self-audit";
import { loadKeyring } from "../sealing/signing-keys";
import { eventJson } from "../model/event-shape";
import { Rollups, type Activity, type Bucket } from "../reads/rollups";
import { beginRollupBackfill, rollupBackfillAlarm } from "../reads/rollup-backfill";
import { hasWitnesses, logAlarm, scheduleLog, type UpkeepDeps } from "../log/log-upkeep";
import { ProjectLog } from "../log/project-log";
import type { NewEvent } from "../model/new-event";
import { archiveStep, type ArchiveHooks } from "../storage/archive-run";
import { restoreNewestSegment, type RestoreStep } from "../storage/archive-restore";
import { afterCommit, archiveAlarm, requestTidy } from "../storage/archive-upkeep";
import { moveAlarm, scheduleMoveFinish } from "../storage/move-upkeep";
import { CompanionRecords, type TrustedCompanions } from "../storage/companion-records";
import { moveCopying, moveStep, type MoveHooks, type MoveProgress } from "../storage/shard-move";
import { eventsDb } from "../storage/shards";
import { LedgerLogRpc } from "./ledger-log-rpc";
import { wakeStreams } from "../streams/wake";
import { deleteProjectJobFiles } from "../jobs/job-files";
import { ensureErasureJob } from "../jobs/erasure-job";
import type { ErasureRequest } from "../chain/erasure-running";
import type { LedgerHost } from "../storage/ledger-host";

/** The only writer of one project's chain: a coordinator; the logic of what it does lives in the domain folders. */
export class ProjectLedger extends LedgerLogRpc {
  private readonly projectId: string;
  /** The project's event shard, resolved once: the ledger is the only writer of its events. */
  private db!: D1Database;
  /** The commit lock and the group commit (src/chain/group-commit.ts). */
  private readonly commits: GroupCommit;
  /** Appends under an Idempotency-Key (src/chain/idempotent-appends.ts). */
  private readonly keyed: IdempotentAppends;
  private readonly erasures: ErasureRecords;
  /** Erasures: accepted at once, applied by a job's bounded steps (src/chain/erasure-coordinator.ts). */
  private readonly erasing: ErasureCoordinator;
  /** Self-audit events of the actions this ledger performs, staged with the change they record (src/chain/audit-outbox.ts). */
  private readonly audit: AuditOutbox;
  private readonly holds: LegalHolds;
  /** Hashes of the archive's export companions, which exports and verify trust (src/storage/companion-records.ts). */
  private readonly companions: CompanionRecords;
  private readonly rates = new RateWindows();
  /** Events per hour and action, for the console's chart (src/reads/rollups.ts). */
  private readonly rollups: Rollups;
  /** What this ledger lends everything that works on its behalf (src/storage/ledger-host.ts). */
  private readonly host: LedgerHost;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    if (!ctx.id.name) throw new Error("ProjectLedger must be addressed by project id (idFromName)");
    this.projectId = ctx.id.name;
    this.erasures = new ErasureRecords(ctx.storage.sql);
    this.companions = new CompanionRecords(ctx.storage.sql);
    this.audit = new AuditOutbox(ctx.storage.sql);
    this.holds = new LegalHolds(ctx.storage);
    this.rollups = new Rollups(ctx.storage.sql);
    this.host = {
      env,
      projectId: this.projectId,
      storage: ctx.storage,
      db: () => this.db,
      head: () => this.current,
      exclusive: (work) => this.commits.exclusive(work),
    };
    this.erasing = new ErasureCoordinator({
      ...this.host,
      records: this.erasures,
      outbox: this.audit,
      holds: this.holds,
      recordCompanions: (sha, hashes) => this.companions.record(sha, hashes),
      drainAudit: () => this.drainAudit(),
      deleteJobFiles: (db) => deleteProjectJobFiles(env, db, this.projectId),
      ensureJob: (running) => ensureErasureJob(this.db, this.projectId, running),
    });
    this.commits = new GroupCommit({
      ...this.host,
      log: () => this.log,
      advance: (head, rows) => {
        this.current = head;
        this.ctx.storage.kv.put("head", head);
        this.rollups.add(rows);
      },
      committed: () => {
        // Log streams deliver on their own; the ledger only wakes them, never waits.
        this.ctx.waitUntil(wakeStreams(this.env, this.projectId).catch(() => {}));
        if (hasWitnesses(this.env)) void scheduleLog(this.log, this.logDeps()).catch(() => {});
        // Continuous archiving and the shard's size check run from the alarm (src/storage/archive-upkeep.ts).
        void afterCommit(this.ctx.storage).catch(() => {});
      },
      recover: () => this.loadHead(),
    });
    this.keyed = new IdempotentAppends(env, this.projectId, () => this.db, (events, key, requestHash) => this.commits.enqueue(events, key, requestHash));
    // Once started, append any self-audit event a crash left staged.
    ctx.blockConcurrencyWhile(() => this.loadHead()).then(() => this.drainAudit()).then(() => this.erasing.resume());
  }

  /**
   * The head lives in this object's own storage, never taken from D1. Rows
   * found past it are adopted only after recoverHead checked them (a commit
   * whose answer was lost); planted rows are refused and left for verify.
   */
  private async loadHead() {
    this.db = await eventsDb(this.env, this.projectId);
    if (this.ctx.storage.kv.get<number>("signed_from") === undefined) this.ctx.storage.kv.put("signed_from", 1);
    const stored = this.ctx.storage.kv.get<Head>("head") ?? { seq: 0, hash: null };
    this.log ??= new ProjectLog(this.ctx.storage, this.env, this.projectId);
    this.log.init(stored);
    const recovered = await recoverHead(this.db, await loadKeyring(this.env.SIGNING_KEYS), this.projectId, stored, MAX_GROUP_EVENTS);
    this.current = recovered.head;
    // Adopted rows are a commit whose head was never recorded, so neither were its leaves.
    const leaves = await this.log.prepare(recovered.adopted);
    this.log.apply(leaves);
    if (recovered.adopted.length > 0) {
      this.ctx.storage.kv.put("head", this.current);
      this.rollups.add(recovered.adopted);
    }
    // Rollups older than the console's: rebuilt once from the hot events, by the alarm.
    await beginRollupBackfill(this.ctx.storage, this.rollups, this.current.seq);
    // Pin the log's id on first wake, before anything asks for it: a D1 log_id changed later cannot move this log.
    await this.log.logId().catch(() => {});
    await scheduleLog(this.log, this.logDeps());
  }

  /**
   * What verification anchors on: the head as this ledger committed it and the
   * seq from which every row is signed (1 for every project this code made; an
   * operator importing an older, unsigned history would record a later one).
   */
  anchor(): Anchor {
    return { ...this.current, signedFrom: this.ctx.storage.kv.get<number>("signed_from") ?? 1 };
  }

  /** The head after every commit queued before this call has finished (verify: committed, or planted?). */
  committedHead(): Promise<Head> {
    return this.commits.exclusive(async () => ({ ...this.current }));
  }

  /** Admin actions recorded in the chain (src/chain/self-audit.ts): appended like events, never rate limited. */
  async selfAudit(events: PackedEvents): Promise<string[]> {
    return (await this.commits.enqueue(unpackEvents(events))).map(eventJson);
  }

  async append(request: AppendRequest): Promise<AppendResult> {
    const rate = this.rates.hit(request.keyPrefix, request.rateLimit);
    if (!rate.allowed) return { status: "rate_limited", rate };
    const events = unpackEvents(request.events);
    if (request.idempotencyKey === null) return { status: "appended", events: (await this.commits.enqueue(events)).map(eventJson), rate };
    return { ...(await this.keyed.run(events, request.idempotencyKey, request.requestHash)), rate };
  }

  /** DELETE /v1/actors/:id: answers at once; a job applies it (src/chain/erasure-coordinator.ts). */
  erase(req: Omit<ErasureRequest, "projectId">, by: AuditActor, origin: AuditOrigin): Promise<ErasureAnswer> {
    return this.erasing.accept(req, by, origin);
  }

  /** One bounded step of an erasure's job; each holds the commit lock for one batch or one segment's switch. */
  erasureStep(erasureId: number): Promise<ErasureStepResult> {
    return this.erasing.step(erasureId);
  }

  /** For exports and verify: the companion hashes this ledger recorded for these archive segments (by the segment's SHA-256). */
  companionHashes(segmentSha256s: string[]): TrustedCompanions {
    return this.companions.lookup(segmentSha256s);
  }

  /** For verify: the anonymized_at an erasure record gives each of these seqs (absent: no erasure covers it). */
  erasedAt(seqs: number[]): Record<number, string> {
    return this.erasures.erasedAt(seqs);
  }

  /** Counts an ingest request that failed before it could be appended. */
  countRequest(keyPrefix: string, limit: number): RateState {
    return this.rates.hit(keyPrefix, limit);
  }

  /** The plan, in the order rules apply, and its lock (src/chain/retention-plan.ts). */
  retentionState(): RetentionState {
    return retentionState(this.ctx.storage.kv);
  }

  /** Replaces the plan, unless its lock forbids the change; self-audited. */
  async setRetention(proposal: { rules: RetentionRule[]; lock?: boolean }, by: AuditActor, origin: AuditOrigin): Promise<RetentionChange> {
    return this.audited(() => changeRetention(this.ctx.storage, this.env.DB, this.audit, this.projectId, proposal, by, origin));
  }

  /** Every legal hold, newest first (src/chain/legal-holds.ts). */
  legalHolds(): LegalHold[] {
    return this.holds.list();
  }

  /** Under the commit lock, so no purge or erasure still running misses it; null: too many holds. Self-audited. */
  async placeLegalHold(input: { organization: string | null; actor_id: string | null; reason: string }, by: AuditActor, origin: AuditOrigin) {
    return this.audited(async () => this.holds.place(input, by, origin, this.audit));
  }

  /** Null: no such hold. Self-audited (once). */
  async releaseLegalHold(id: string, by: AuditActor, origin: AuditOrigin) {
    return this.audited(async () => this.holds.release(id, by, origin, this.audit));
  }

  /** One bounded retention step (src/chain/retention.ts); it holds the commit lock, so it never interleaves with an append. */
  purgeExpired(now: string, afterSeq: number): Promise<{ purged: number; refused: number; done: boolean; lastSeq: number }> {
    return this.commits.exclusive(async () => {
      if (this.historyBusy()) return { purged: 0, refused: 0, done: true, lastSeq: afterSeq };
      // The plan in this object's storage is the only copy a purge obeys.
      const plan = { rules: retentionRules(this.ctx.storage.kv), signedFrom: this.anchor().signedFrom, holds: this.holds.active() };
      return purgeStep(this.env, this.db, this.projectId, plan, new Date(now), afterSeq, { kv: this.ctx.storage.kv, companions: this.companions });
    });
  }

  /** The daily cron's wake-up: the first purge steps now, the rest from the alarm (src/chain/retention-upkeep.ts). */
  purgeNow(now: string): Promise<{ purged: number; done: boolean }> {
    return purgeRun(this.ctx.storage, (at, afterSeq) => this.purgeExpired(at, afterSeq), now);
  }

  /** One bounded step of an operator-requested shard move (src/storage/shard-move.ts), under the commit lock; hooks: tests only. */
  async moveShard(shard: number, hooks: MoveHooks = {}): Promise<MoveProgress> {
    const host = { ...this.host, switchTo: (db: D1Database) => (this.db = db) };
    const progress = await this.commits.exclusive(() => moveStep(host, shard, hooks));
    await scheduleMoveFinish(this.ctx.storage, progress);
    return progress;
  }

  /** Seals the next segment older than the hot window (src/storage/archive-run.ts), under the commit lock. */
  archiveSegment(now: string, hooks: ArchiveHooks = {}): Promise<{ archived: number; done: boolean }> {
    return this.commits.exclusive(async () => {
      if (this.historyBusy()) return { archived: 0, done: true };
      const runningErasures = new Set(this.erasures.running.list().map((r) => r.erasure_id));
      return archiveStep(this.env, this.db, this.projectId, new Date(now), this.companions, { ...hooks, runningErasures }).then(({ archived, done }) => ({ archived, done }));
    });
  }

  /** One archived segment back into D1, the newest first (src/storage/archive-restore.ts), under the commit lock. */
  restoreArchived(): Promise<RestoreStep> {
    return this.commits.exclusive(async () => (this.historyBusy() ? { status: "refused" as const, message: "the log is being built or the project moved: try again later" } : restoreNewestSegment(this.env, this.db, this.projectId)));
  }

  /** GET /v1/stats/activity: events per bucket and top action, from the rollups (never the events). */
  activity(from: string, to: string, bucket: Bucket): Activity {
    return this.rollups.read(from, to, bucket);
  }

  /** The daily check (src/storage/archive-check.ts): a tidy archive pass at the next alarm, now. */
  archiveSoon(): Promise<void> {
    return requestTidy(this.ctx.storage);
  }

  /** Background work: the log's (building the tree of an older project, witness rounds), then continuous archiving. */
  async alarm() {
    await logAlarm(this.log, this.logDeps());
    await moveAlarm(this.ctx.storage, (shard) => this.moveShard(shard));
    await retentionAlarm(this.ctx.storage, (at, afterSeq) => this.purgeExpired(at, afterSeq));
    await archiveAlarm({ ...this.host, step: (now, mode) => this.archiveSegment(now, { mode }) });
    await rollupBackfillAlarm({ ...this.host, rollups: this.rollups });
  }

  /**
   * Purges and archiving wait while the log's tree is still being built (it
   * reads old rows from D1: taking them first would leave it unbuildable) and
   * while a shard move copies the hot rows and gap records once.
   */
  private historyBusy(): boolean {
    return this.log.status === "building" || moveCopying(this.ctx.storage.kv);
  }

  /** An action this ledger performs and self-audits: under the commit lock, then its staged record appended. */
  private async audited<T>(work: () => Promise<T>): Promise<T> {
    const result = await this.commits.exclusive(work);
    await this.drainAudit();
    return result;
  }

  /** Appends the staged self-audit events; one that fails waits in storage for the next drain (or the next start). */
  private async drainAudit(): Promise<void> {
    const append = (events: NewEvent[], idempotencyKey: string) => this.commits.enqueue(events, idempotencyKey);
    await this.audit.drain(this.env, () => this.db, this.projectId, append).catch((error) => console.error(`ledger ${this.projectId}: self-audit append failed; retried later`, error));
  }

  private logDeps(): UpkeepDeps {
    return this.host;
  }
}
