import { RateWindows } from "../lib/rate-window";
import type { Anchor, Head } from "../chain/chain-check";
import { AuditOutbox } from "../chain/audit-outbox";
import { ErasureCoordinator } from "../chain/erasure-coordinator";
import { ErasureRecords } from "../chain/erasure-records";
import { CommitJournal, journalLanded, resendJournal, type Journaled } from "../chain/commit-journal";
import { backlogMarked } from "../chain/commit-backlog";
import { GroupCommit, MAX_GROUP_EVENTS } from "../chain/group-commit";
import { IngestAdmission } from "../chain/ingest-admission";
import { recoverHead } from "../chain/head-recovery";
import { IdempotentAppends } from "../chain/idempotent-appends";
import { HeadWaiters } from "../chain/head-waiters";
import { LegalHolds } from "../chain/legal-holds";
import { loadKeyring } from "../sealing/signing-keys";
import { idMillis } from "../model/event-id";
import { Rollups } from "../reads/rollups";
import { beginRollupBackfill } from "../reads/rollup-backfill";
import { catchUpRollups } from "../reads/rollup-catch-up";
import { hasWitnesses, scheduleLog, type UpkeepDeps } from "../log/log-upkeep";
import { ProjectLog } from "../log/project-log";
import type { NewEvent } from "../model/new-event";
import { afterCommit } from "../storage/archive-upkeep";
import { CommitArms } from "../storage/commit-arms";
import { CompanionRecords } from "../storage/companion-records";
import { moveCopying } from "../storage/shard-move";
import { eventsDb } from "../storage/shards";
import { ingestEventsPerMinute } from "../storage/projects";
import { LedgerLogRpc } from "./ledger-log-rpc";
import { wakeStreams } from "../streams/wake";
import { wakeAlerts } from "../alerts/wake";
import { deleteProjectJobFiles } from "../jobs/job-files";
import { ensureErasureJob } from "../jobs/erasure-job";
import type { LedgerHost } from "../storage/ledger-host";
import { Catalog } from "../catalog/catalog-cache";
import { CatalogStore } from "../catalog/catalog-store";

/**
 * The ledger's state and wiring: the head, the commit lock and group commit,
 * the records it keeps in its own storage, and the one LedgerHost
 * (src/storage/ledger-host.ts) it lends to every step that works for it.
 * The RPC facets (ledger-log-rpc.ts, ledger-history-rpc.ts,
 * ledger-chain-rpc.ts) and ProjectLedger build on it.
 */
export abstract class LedgerCore extends LedgerLogRpc {
  protected readonly projectId: string;
  /** The project's event shard, resolved once: the ledger is the only writer of its events. */
  protected db!: D1Database;
  /** The commit lock and the group commit (src/chain/group-commit.ts). */
  protected readonly commits: GroupCommit;
  /** The commit in flight, kept from before its D1 batch (src/chain/commit-journal.ts). */
  protected readonly journal: CommitJournal;
  /** Appends under an Idempotency-Key (src/chain/idempotent-appends.ts). */
  protected readonly keyed: IdempotentAppends;
  protected readonly erasures: ErasureRecords;
  /** Erasures: accepted at once, applied by a job's bounded steps (src/chain/erasure-coordinator.ts). */
  protected readonly erasing: ErasureCoordinator;
  /** Self-audit events of the actions this ledger performs, staged with the change they record (src/chain/audit-outbox.ts). */
  protected readonly audit: AuditOutbox;
  protected readonly holds: LegalHolds;
  /** Hashes of the archive's export companions, which exports and verify trust (src/storage/companion-records.ts). */
  protected readonly companions: CompanionRecords;
  protected readonly rates = new RateWindows();
  /** Back-pressure: the project's events budget and the commit queue's bounds (src/chain/ingest-admission.ts). */
  protected readonly admission: IngestAdmission;
  /** Feed readers long-polling for the next commit (src/chain/head-waiters.ts). */
  protected readonly heads = new HeadWaiters();
  /** Events per hour and action, for the console's chart (src/reads/rollups.ts). */
  protected readonly rollups: Rollups;
  /** What this ledger lends everything that works on its behalf (src/storage/ledger-host.ts). */
  protected readonly host: LedgerHost;
  /** Which arm, the main tables or a period, its commits are written to (src/storage/commit-arms.ts). */
  protected readonly arms: CommitArms;
  /** The action catalog: schemas, versions, validation settings (src/catalog/). */
  protected readonly catalog: CatalogStore;
  private compiledCatalog: Catalog | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    if (!ctx.id.name) throw new Error("ProjectLedger must be addressed by project id (idFromName)");
    this.projectId = ctx.id.name;
    this.erasures = new ErasureRecords(ctx.storage.sql);
    this.companions = new CompanionRecords(ctx.storage.sql);
    this.audit = new AuditOutbox(ctx.storage.sql);
    this.holds = new LegalHolds(ctx.storage);
    this.rollups = new Rollups(ctx.storage.sql);
    this.catalog = new CatalogStore(ctx.storage.sql, ctx.storage.kv);
    this.journal = new CommitJournal(ctx.storage.sql);
    this.host = {
      env,
      projectId: this.projectId,
      storage: ctx.storage,
      db: () => this.db,
      head: () => this.current,
      exclusive: (work) => this.commits.exclusive(work),
    };
    this.arms = new CommitArms(this.host);
    this.erasing = new ErasureCoordinator({
      ...this.host,
      records: this.erasures,
      outbox: this.audit,
      holds: this.holds,
      recordCompanions: (sha, hashes) => this.companions.record(sha, hashes),
      drainAudit: () => this.drainAudit(),
      deleteJobFiles: (db) => deleteProjectJobFiles(env, db, this.projectId),
      ensureJob: (running) => ensureErasureJob(this.db, this.projectId, running),
      journal: this.journal,
    });
    this.commits = new GroupCommit({
      ...this.host,
      journal: this.journal,
      log: () => this.log,
      advance: (head, rows) => {
        this.current = head;
        // The log's newest leaf row holds the head when it took the commit's leaves (log-store.ts): one row, not two.
        if (!this.log.holds(head)) this.ctx.storage.kv.put("head", head);
        this.rollups.defer(rows);
      },
      committed: () => {
        this.heads.advanced(this.current.seq);
        // Log streams deliver on their own; the ledger only wakes them, never waits.
        this.ctx.waitUntil(wakeStreams(this.env, this.projectId).catch(() => {}));
        // Alert rules are evaluated by their own object, from a cursor (src/alerts/), never inside the commit.
        if ((this.ctx.storage.kv.get<number>("alert_rules") ?? 0) > 0) this.ctx.waitUntil(wakeAlerts(this.env, this.projectId).catch(() => {}));
        if (hasWitnesses(this.env)) void scheduleLog(this.log, this.logDeps()).catch(() => {});
        // Continuous archiving and the shard's size check run from the alarm (src/storage/archive-upkeep.ts).
        void afterCommit(this.ctx.storage).catch(() => {});
      },
      recover: () => this.loadHead(),
      indexed: (head) => this.ctx.storage.kv.put("indexed_head", head),
      commitArm: (ms) => this.arms.arm(ms),
    });
    this.keyed = new IdempotentAppends(env, this.projectId, () => this.db, (key) => this.commits.keyedAhead(key), (events, key, requestHash, bytes, token) => this.commits.enqueue(events, key, requestHash, bytes, token));
    this.admission = new IngestAdmission(() => this.commits.load(), () => ingestEventsPerMinute(env, this.projectId));
    // Once started, append any self-audit event a crash left staged.
    // Which arm commits go to is read once the shard is known, before the first commit: one sent to the main tables
    // meanwhile would mark them, and reads would take them for growing from then on (src/storage/commit-arms.ts).
    ctx.blockConcurrencyWhile(async () => (await this.loadHead(true), await this.arms.refresh())).then(() => this.drainAudit()).then(() => this.erasing.resume());
  }

  /**
   * The head lives in this object's own storage, never taken from D1: the
   * log's newest leaf row (its tree's size and last leaf's data) once the log
   * takes every commit's leaves, else its own KV value; whichever is further
   * on. Rows found past it are adopted only after recoverHead checked them (a
   * commit whose answer was lost); planted rows are refused and left for verify.
   * At a start, a commit journaled past that head, which a stopped instance
   * never learned the outcome of, is sent to D1 again (src/chain/commit-journal.ts).
   */
  protected async loadHead(start = false) {
    this.db = await eventsDb(this.env, this.projectId);
    if (this.ctx.storage.kv.get<number>("signed_from") === undefined) this.ctx.storage.kv.put("signed_from", 1);
    this.log ??= new ProjectLog(this.ctx.storage, this.env, this.projectId);
    const saved = this.ctx.storage.kv.get<Head>("head") ?? { seq: 0, hash: null };
    const kept = this.log.keptHead();
    const stored = kept !== null && kept.seq > saved.seq ? kept : saved;
    this.log.init(stored);
    const marked = start && (await backlogMarked(this.db, this.projectId));
    const found = await recoverHead(this.db, await loadKeyring(this.env.SIGNING_KEYS), this.projectId, stored, MAX_GROUP_EVENTS);
    // A backlog to index: the mark says commits may have been answered before D1 had them, or the head is past D1
    // (commits put in the chain while the mark's delete was in flight, answered only once indexed).
    const behind = start && (marked || !found.inD1);
    const backlog = behind ? await this.journaledBacklog(found.head) : [];
    const recovered = behind ? this.aheadOf(found, backlog) : await this.resumeJournal(start, found);
    this.current = recovered.head;
    this.commits.resumeAfter(recovered.lastReceivedMs);
    // Adopted rows are a commit whose head was never recorded, so neither were its leaves.
    const leaves = await this.log.prepare(recovered.adopted);
    this.log.apply(leaves);
    if (recovered.adopted.length > 0) this.ctx.storage.kv.put("head", this.current);
    // Counts a stopped instance had not written yet, and the adopted commit's: what D1 holds from it, then the backlog's.
    const inD1 = backlog.length > 0 ? backlog[0].entry.after.seq : this.current.seq;
    await catchUpRollups(this.db, this.projectId, this.rollups, stored.seq, inD1);
    const counted = this.rollups.through() ?? 0;
    for (const { entry } of backlog) this.rollups.defer(entry.rows.filter((r) => r.seq > counted));
    if (behind) await this.commits.resumeBacklog(backlog, marked);
    // Rollups older than the console's: rebuilt once from the hot events, by the alarm.
    await beginRollupBackfill(this.ctx.storage, this.rollups, this.current.seq);
    // Pin the log's id on first wake, before anything asks for it: a D1 log_id changed later cannot move this log.
    await this.log.logId().catch(() => {});
    await scheduleLog(this.log, this.logDeps());
  }

  /**
   * At a start: the journal's commit, when it follows the head recovered from
   * D1 (so it has not landed, or recoverHead would have adopted it), sent again.
   * Landed, it is adopted as recoverHead adopts one; refused (a worker gave one
   * of its appends up first), it is forgotten. When D1 cannot take it now, the
   * ledger starts with the head it has and the journal kept: the next start
   * sends it again, unless a commit of this instance takes its place (its
   * appends' workers, whose calls failed, give them up when they find nothing).
   */
  private async resumeJournal<R extends { head: Head; adopted: ReadonlyArray<{ seq: number; hash: string }>; lastReceivedMs: number | null }>(start: boolean, recovered: R): Promise<R> {
    const pending = start ? this.journal.after(recovered.head) : null;
    if (pending === null) return recovered;
    try {
      if ((await resendJournal(this.db, this.projectId, pending)) === "refused") {
        this.journal.clear();
        return recovered;
      }
    } catch (error) {
      console.error(`ledger ${this.projectId}: a journaled commit (seq ${pending.rows[0].seq}-) could not be sent again; kept for the next start`, error);
      return recovered;
    }
    const last = pending.rows[pending.rows.length - 1];
    return { ...recovered, head: { seq: last.seq, hash: last.hash }, adopted: pending.rows, lastReceivedMs: idMillis(last.id) };
  }

  /**
   * At a start that finds the backlog mark: the journal's commits D1 does not
   * hold yet, in chain order. They follow the head D1 held at the last batch
   * this ledger saw land (`indexed_head`); one that landed since, its answer
   * lost with the instance, is found by its first row (batches land in order,
   * so those are a prefix).
   */
  private async journaledBacklog(recovered: Head): Promise<Journaled[]> {
    const chain = this.journal.chainFrom(this.ctx.storage.kv.get<Head>("indexed_head") ?? recovered);
    let landed = 0;
    while (landed < chain.length && (await journalLanded(this.db, this.projectId, chain[landed].entry))) landed++;
    return chain.slice(landed);
  }

  /** The head past a backlog: its last commit, and the leaves of the commits the stopped instance journaled but had not put in its head. */
  private aheadOf<R extends { head: Head; adopted: ReadonlyArray<{ seq: number; hash: string }>; lastReceivedMs: number | null }>(recovered: R, backlog: readonly Journaled[]): R {
    const last = backlog[backlog.length - 1]?.entry.rows.at(-1);
    if (!last || last.seq <= recovered.head.seq) return recovered;
    const adopted = backlog.flatMap(({ entry }) => entry.rows.filter((r) => r.seq > recovered.head.seq));
    return { ...recovered, head: { seq: last.seq, hash: last.hash }, adopted, lastReceivedMs: idMillis(last.id) };
  }

  /**
   * Purges and archiving wait while the log's tree is still being built (it
   * reads old rows from D1: taking them first would leave it unbuildable) and
   * while a shard move copies the hot rows and gap records once.
   */
  protected historyBusy(): boolean {
    return this.log.status === "building" || moveCopying(this.ctx.storage.kv);
  }

  /** An action this ledger performs and self-audits: under the commit lock, then its staged record appended. */
  protected async audited<T>(work: () => Promise<T>): Promise<T> {
    const result = await this.commits.exclusive(work);
    await this.drainAudit();
    return result;
  }

  /** Appends the staged self-audit events; one that fails waits in storage for the next drain (or the next start). */
  protected async drainAudit(): Promise<void> {
    const append = (events: NewEvent[], idempotencyKey: string) => this.commits.enqueue(events, idempotencyKey);
    await this.audit.drain(this.env, () => this.db, this.projectId, append).catch((error) => console.error(`ledger ${this.projectId}: self-audit append failed; retried later`, error));
  }

  /** The catalog compiled, for the sentences of the events this ledger answers with; compiled again after each change. */
  protected compiled(): Catalog {
    if (this.compiledCatalog?.revision !== this.catalog.revision()) this.compiledCatalog = new Catalog(this.catalog.snapshot());
    return this.compiledCatalog;
  }

  protected logDeps(): UpkeepDeps {
    return this.host;
  }

  /**
   * What verification anchors on: the head as this ledger committed it and the
   * seq from which every row is signed (1 for every project this code made; an
   * operator importing an older, unsigned history would record a later one).
   */
  async anchor(): Promise<Anchor> {
    // Whoever anchors on it reads the rows up to it from D1: a commit answered ahead of a lagging shard is indexed first
    // (chain/commit-backlog.ts). The head as it is now, not after the wait, which later commits may have moved on.
    const anchor = this.anchorNow();
    await this.commits.indexed();
    return anchor;
  }

  /** The anchor as it stands, for the ledger's own use. */
  protected anchorNow(): Anchor {
    return { ...this.current, signedFrom: this.ctx.storage.kv.get<number>("signed_from") ?? 1 };
  }
}
