import { DurableObject } from "cloudflare:workers";
import { RateWindows, type RateState } from "../auth/rate-window";
import type { Anchor, Head } from "../chain/chain-check";
import { unpackEvents, type PackedEvents } from "../chain/ledger";
import { AuditOutbox } from "../chain/audit-outbox";
import { eraseActor, type ErasureOutcome, type ErasureRequest } from "../chain/erasure";
import { ErasureRecords } from "../chain/erasure-records";
import { insertEventsStatements } from "../chain/event-insert";
import { recoverHead } from "../chain/head-recovery";
import { IdempotentAppends, type AppendRequest, type AppendResult } from "../chain/idempotent-appends";
import { LegalHolds, type LegalHold } from "../chain/legal-holds";
import { purgeBatch } from "../chain/retention";
import { changeRetention, retentionRules, retentionState, type RetentionChange, type RetentionState } from "../chain/retention-plan";
import type { RetentionRule } from "../chain/retention-rules";
import type { AuditActor, AuditOrigin } from "../chain/self-audit";
import { idempotencyStatements, sealEvents } from "../chain/seal-events";
import { loadKeyring } from "../chain/signing-keys";
import { loadVerifyCheckpoint, storeVerifyCheckpoint, type VerifyCheckpoint } from "../chain/verify-checkpoint";
import type { EventRow } from "../db/schema";
import { eventJson } from "../reads/event-shape";
import { hasWitnesses, logAlarm, scheduleLog, type UpkeepDeps } from "../log/log-upkeep";
import type { LeafRun } from "../log/leaf-check";
import { logInfo } from "../log/log-info";
import { ProjectLog } from "../log/project-log";
import type { NewEvent } from "../schemas/event";
import { archiveStep, type ArchiveHooks } from "../storage/archive-run";
import { restoreExpired } from "../storage/archive-retention";
import { CompanionRecords, type TrustedCompanions } from "../storage/companion-records";
import { archiveTier } from "../storage/archive-walk";
import { moveCopying, moveStep, restartCopy, type MoveHooks, type MoveProgress } from "../storage/shard-move";
import { eventsDb, forgetShard } from "../storage/shards";
import { wakeStreams } from "../streams/wake";
import { deleteProjectJobFiles } from "../jobs/job-files";

interface Pending {
  events: NewEvent[];
  idempotencyKey: string | null;
  requestHash: string | null;
  resolve: (rows: EventRow[]) => void;
  reject: (error: unknown) => void;
}

/** Bound on one group commit, so one D1 batch stays well inside its limits. */
const MAX_GROUP_EVENTS = 1000;

/**
 * The only writer of one project's chain. Concurrent appends queue up and are
 * committed together in one D1 batch (group commit) that also moves the head;
 * the in-memory head moves only after D1 said yes.
 */
export class ProjectLedger extends DurableObject<Env> {
  private readonly projectId: string;
  private current: Head = { seq: 0, hash: null };
  /** The project's event shard, resolved once: the ledger is the only writer of its events. */
  private db!: D1Database;
  private queue: Pending[] = [];
  private lock: Promise<void> = Promise.resolve();
  private commitScheduled = false;
  /** Appends under an Idempotency-Key (src/chain/idempotent-appends.ts). */
  private readonly keyed: IdempotentAppends;
  private readonly erasures: ErasureRecords;
  /** Self-audit events of the actions this ledger performs, staged with the change they record (src/chain/audit-outbox.ts). */
  private readonly audit: AuditOutbox;
  private readonly holds: LegalHolds;
  /** Hashes of the archive's export companions, which exports and verify trust (src/storage/companion-records.ts). */
  private readonly companions: CompanionRecords;
  private readonly rates = new RateWindows();
  /** The project's transparency log: its tree lives in this object's storage, next to the head. */
  private log!: ProjectLog;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    if (!ctx.id.name) throw new Error("ProjectLedger must be addressed by project id (idFromName)");
    this.projectId = ctx.id.name;
    this.erasures = new ErasureRecords(ctx.storage.sql);
    this.companions = new CompanionRecords(ctx.storage.sql);
    this.audit = new AuditOutbox(ctx.storage.sql);
    this.holds = new LegalHolds(ctx.storage);
    this.keyed = new IdempotentAppends(env, this.projectId, () => this.db, (events, key, requestHash) => this.enqueue(events, key, requestHash));
    // Once started, append any self-audit event a crash left staged.
    ctx.blockConcurrencyWhile(() => this.loadHead()).then(() => this.drainAudit());
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
    const ring = await loadKeyring(this.env.SIGNING_KEYS);
    const recovered = await recoverHead(this.db, ring, this.projectId, stored, MAX_GROUP_EVENTS);
    if (recovered.refused) console.warn(`ledger ${this.projectId}: kept head ${stored.seq}; rows past it refused: ${recovered.refused}`);
    this.current = recovered.head;
    // Adopted rows are a commit whose head was never recorded, so neither were its leaves.
    const leaves = await this.log.prepare(recovered.adopted);
    this.log.apply(leaves);
    if (recovered.adopted.length > 0) this.ctx.storage.kv.put("head", this.current);
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
    return this.exclusive(async () => ({ ...this.current }));
  }

  /** Admin actions recorded in the chain (src/chain/self-audit.ts): appended like events, never rate limited. */
  async selfAudit(events: PackedEvents): Promise<string[]> {
    return (await this.enqueue(unpackEvents(events))).map(eventJson);
  }

  async append(request: AppendRequest): Promise<AppendResult> {
    const rate = this.rates.hit(request.keyPrefix, request.rateLimit);
    if (!rate.allowed) return { status: "rate_limited", rate };
    const events = unpackEvents(request.events);
    if (request.idempotencyKey === null) return { status: "appended", events: (await this.enqueue(events)).map(eventJson), rate };
    return { ...(await this.keyed.run(events, request.idempotencyKey, request.requestHash)), rate };
  }

  /**
   * Erasure rewrites rows of this chain, so it holds the commit lock as a group
   * commit does: appends arriving meanwhile queue up and commit right after.
   * Every scrubbed row is covered by an erasure record in this object's storage.
   * Refused when a legal hold covers any of the events; self-audited.
   */
  async erase(req: Omit<ErasureRequest, "projectId">, by: AuditActor, origin: AuditOrigin): Promise<ErasureOutcome> {
    const outcome = await this.exclusive(async () => {
      const ctx = { holds: this.holds, outbox: this.audit, by, origin };
      const done = await eraseActor(this.env, this.db, this.erasures, await loadKeyring(this.env.SIGNING_KEYS), { ...req, projectId: this.projectId }, ctx);
      // A shard move may have copied the rows before they were scrubbed.
      if (done.status === "erased") restartCopy(this.ctx.storage.kv);
      return done;
    });
    await this.drainAudit();
    // Export jobs' files may hold the erased values in clear, as staged exports may.
    if (outcome.status === "erased") await deleteProjectJobFiles(this.env, this.db, this.projectId);
    return outcome;
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

  /** The retention plan, from this object's storage: the only copy a purge obeys. */
  retention(): RetentionRule[] {
    return retentionRules(this.ctx.storage.kv);
  }

  /** The plan, in the order rules apply, and its lock (src/chain/retention-plan.ts). */
  retentionState(): RetentionState {
    return retentionState(this.ctx.storage.kv);
  }

  /** Replaces the plan, unless its lock forbids the change; self-audited. */
  async setRetention(proposal: { rules: RetentionRule[]; lock?: boolean }, by: AuditActor, origin: AuditOrigin): Promise<RetentionChange> {
    const change = await this.exclusive(() => changeRetention(this.ctx.storage, this.env.DB, this.audit, this.projectId, proposal, by, origin));
    await this.drainAudit();
    return change;
  }

  /** Every legal hold, newest first (src/chain/legal-holds.ts). */
  legalHolds(): LegalHold[] {
    return this.holds.list();
  }

  /** Under the commit lock, so no purge or erasure still running misses it; null: too many holds. Self-audited. */
  async placeLegalHold(input: { organization: string | null; actor_id: string | null; reason: string }, by: AuditActor, origin: AuditOrigin) {
    const hold = await this.exclusive(async () => this.holds.place(input, by, origin, this.audit));
    await this.drainAudit();
    return hold;
  }

  /** Null: no such hold. Self-audited (once). */
  async releaseLegalHold(id: string, by: AuditActor, origin: AuditOrigin) {
    const released = await this.exclusive(async () => this.holds.release(id, by, origin, this.audit));
    await this.drainAudit();
    return released;
  }

  /** One bounded retention batch; it holds the commit lock, so it never interleaves with an append. */
  purgeExpired(now: string, afterSeq: number): Promise<{ purged: number; refused: number; done: boolean; lastSeq: number }> {
    return this.exclusive(async () => {
      // A tree still being built reads old rows from D1: purging them first would leave it unbuildable forever.
      if (this.log.status === "building") return { purged: 0, refused: 0, done: true, lastSeq: afterSeq };
      // A shard move copies gap records once: the purge waits for the next cron run.
      if (moveCopying(this.ctx.storage.kv)) return { purged: 0, refused: 0, done: true, lastSeq: afterSeq };
      const plan = { rules: this.retention(), signedFrom: this.anchor().signedFrom, holds: this.holds.active() };
      const ring = await loadKeyring(this.env.SIGNING_KEYS);
      const batch = await purgeBatch(this.db, ring, this.projectId, plan, new Date(now), afterSeq, archiveTier(this.env, this.db, this.projectId));
      if (!batch.done) return batch;
      // Hot rows done: bring back the next archived segment with expired events, and purge again from the start.
      const cold = await restoreExpired(this.env, this.db, this.projectId, plan.rules, new Date(now), this.ctx.storage.kv, plan.holds);
      return cold.more ? { ...batch, done: false, lastSeq: 0 } : batch;
    });
  }

  /**
   * One bounded step of moving this project's events to another shard
   * (src/storage/shard-move.ts); an operator requested it in the control
   * database. Holds the commit lock, so appends wait for one batch at most.
   * hooks: tests only (injected crashes, a shorter drain).
   */
  moveShard(shard: number, hooks: MoveHooks = {}): Promise<MoveProgress> {
    return this.exclusive(async () => {
      const host = { env: this.env, projectId: this.projectId, kv: this.ctx.storage.kv, head: () => this.current.seq, switchTo: (db: D1Database) => (this.db = db) };
      try {
        return await moveStep(host, shard, hooks);
      } catch (error) {
        // The directory may have switched even though its answer was lost: write where it says.
        forgetShard(this.projectId);
        this.db = await eventsDb(this.env, this.projectId);
        throw error;
      }
    });
  }

  /**
   * Seals the next segment of events older than the project's hot window into
   * the cold archive (src/storage/archive-run.ts). Holds the commit lock, so
   * it never interleaves with an append, an erasure or a purge.
   */
  archiveSegment(now: string, hooks: ArchiveHooks = {}): Promise<{ archived: number; done: boolean }> {
    return this.exclusive(async () => {
      // As for purges: a tree being built still reads old rows from D1, and a move copies what is hot.
      if (this.log.status === "building" || moveCopying(this.ctx.storage.kv)) return { archived: 0, done: true };
      const { archived, done } = await archiveStep(this.env, this.db, this.projectId, new Date(now), this.companions, hooks);
      return { archived, done };
    });
  }

  /** GET /v1/log: the log's identity, published tree and build status. */
  logInfo() {
    return logInfo(this.log, this.env, this.current);
  }

  /** For the public address `logId`: the newest checkpoint (null without a signing key); mine false when that address is not this log's. */
  async logCheckpoint(logId: string): Promise<{ mine: boolean; note: string | null }> {
    if (!(await this.log.isAt(logId))) return { mine: false, note: null };
    return { mine: true, note: (await this.log.checkpoint())?.text ?? null };
  }

  /** For the public address `logId`: tile bytes of the published tree (null when it has no such tile); mine false when not this log's. */
  async logTile(logId: string, level: number, index: number, width: number): Promise<{ mine: boolean; bytes: Uint8Array | null }> {
    if (!(await this.log.isAt(logId))) return { mine: false, bytes: null };
    return { mine: true, bytes: await this.log.tile(level, index, width) };
  }

  /** The event with `seq` as tlog-proof text against the newest checkpoint; null when not in the published tree. */
  logInclusion(seq: number) {
    return this.log.inclusion(seq);
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
  leavesAt(indexes: number[]): LeafRun {
    return this.log.leavesAt(indexes);
  }

  /** For verify: the published tree's size and root (base64) as the checkpoint signs it, checked against the stored tiles. */
  checkpointAnchor(publishedCopies = true) {
    return this.log.anchor(publishedCopies);
  }

  /** The log's background work: building the tree of an older project, witness rounds. */
  async alarm() {
    await logAlarm(this.log, this.logDeps());
  }

  /** Appends the staged self-audit events; one that fails waits in storage for the next drain (or the next start). */
  private async drainAudit(): Promise<void> {
    const append = (events: NewEvent[], idempotencyKey: string) => this.enqueue(events, idempotencyKey);
    await this.audit.drain(this.env, () => this.db, this.projectId, append).catch((error) => console.error(`ledger ${this.projectId}: self-audit append failed; retried later`, error));
  }

  private logDeps(): UpkeepDeps {
    return { db: this.db, projectId: this.projectId, head: () => this.current, exclusive: (work) => this.exclusive(work), storage: this.ctx.storage, env: this.env };
  }

  /**
   * Runs work while holding the commit lock. Waiters are served in arrival
   * order, so a long stream of appends cannot starve an erasure or a purge.
   */
  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.lock.then(work);
    this.lock = run.then(
      () => {},
      () => {},
    );
    return run;
  }

  private enqueue(events: NewEvent[], idempotencyKey: string | null = null, requestHash: string | null = null): Promise<EventRow[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ events, idempotencyKey, requestHash, resolve, reject });
      this.scheduleCommit();
    });
  }

  /** Group commit: everything queued while the lock was busy goes into the next batch. */
  private scheduleCommit() {
    if (this.commitScheduled || this.queue.length === 0) return;
    this.commitScheduled = true;
    void this.exclusive(async () => {
      this.commitScheduled = false;
      const group: Pending[] = [];
      let size = 0;
      while (this.queue.length > 0 && (group.length === 0 || size + this.queue[0].events.length <= MAX_GROUP_EVENTS)) {
        const next = this.queue.shift()!;
        size += next.events.length;
        group.push(next);
      }
      await this.commit(group);
    }).finally(() => this.scheduleCommit());
  }

  private async commit(group: Pending[]) {
    try {
      const ring = await loadKeyring(this.env.SIGNING_KEYS);
      const rows = await sealEvents(ring, this.projectId, this.current, group.flatMap((p) => p.events));
      const last = rows[rows.length - 1];
      let offset = 0;
      const slices = group.map((p) => rows.slice(offset, (offset += p.events.length)));
      const keyed = group.flatMap((p, i) => (p.idempotencyKey === null ? [] : [{ key: p.idempotencyKey, requestHash: p.requestHash, rows: slices[i] }]));
      // The new leaves are hashed while D1 writes; a failed batch just drops them.
      const [leaves] = await Promise.all([
        this.log.prepare(rows),
        this.db.batch([...insertEventsStatements(this.db, rows), ...idempotencyStatements(this.db, this.projectId, keyed)]),
      ]);
      // No await between the tree and the head: one storage transaction stores both or neither.
      this.log.apply(leaves);
      this.current = { seq: last.seq, hash: last.hash };
      this.ctx.storage.kv.put("head", this.current);
      group.forEach((p, i) => p.resolve(slices[i]));
      // Log streams deliver on their own; the ledger only wakes them, never waits.
      this.ctx.waitUntil(wakeStreams(this.env, this.projectId).catch(() => {}));
      if (hasWitnesses(this.env)) void scheduleLog(this.log, this.logDeps()).catch(() => {});
    } catch (error) {
      // A D1 batch is one transaction: nothing of it was stored. Reload the head
      // anyway, in case the commit did land and only its answer was lost.
      await this.loadHead().catch(() => {});
      group.forEach((p) => p.reject(error));
    }
  }
}

