import type { EventRow } from "../db/schema";
import type { NewEvent } from "../model/new-event";
import type { ShapeRow } from "../model/event-shape";
import type { Arm } from "../model/periods";
import type { Head } from "./chain-check";
import { CommitBacklog, lagBound, type Backlogged } from "./commit-backlog";
import { journalStatements, type CommitJournal, type Journaled, type JournalEntry } from "./commit-journal";
import { findLandedAppend, givenUpAmong, isGivenUpRefusal } from "./landed-appends";
import { sealEvents } from "./seal-events";
import { loadKeyring } from "../sealing/signing-keys";
import type { LedgerHost } from "../storage/ledger-host";

/** Bound on one group commit, so one D1 batch stays well inside its limits. */
export const MAX_GROUP_EVENTS = 1000;

/** How far ahead of this machine's clock a previous instance's last commit may lie and still be gone on from (resumeAfter). */
const RESUME_AHEAD_MS = 60_000;

interface Pending {
  events: NewEvent[];
  /** The request body's size, for the queue's byte bound (src/chain/ingest-admission.ts). */
  bytes: number;
  idempotencyKey: string | null;
  requestHash: string | null;
  /** The worker's name for this append, stored with the commit: after a lost answer it finds whether it landed (src/chain/landed-appends.ts). */
  token: string | null;
  resolve: (rows: EventRow[]) => void;
  reject: (error: unknown) => void;
  /** What its caller gets: asked again by a worker whose call failed (lost). */
  outcome: Promise<EventRow[]>;
}

/** How long this ledger remembers an append its worker gave up on, to refuse it should it still arrive (D1's given-up names, kept a day, back it). */
const GIVEN_UP_MS = 10 * 60_000;

/** Why an append was dropped from the queue: its worker gave it up after its call failed (lost). */
export class GivenUpAppend extends Error {
  constructor() {
    super("The append's worker gave it up after its call to the ledger failed; nothing of it was stored");
  }
}

/**
 * The chain's one seam to the project's transparency log (Tessera's Appender):
 * a commit's leaves are prepared while D1 writes its rows and applied only once
 * D1 said yes. src/log/project-log.ts implements it; the chain never imports it.
 */
export interface LogAppender<Prepared = unknown> {
  prepare(rows: ReadonlyArray<{ seq: number; hash: string }>): Promise<Prepared | null>;
  apply(prepared: Prepared | null): void;
}

/** What the ledger lends its group commit: its chain, its log and its head. */
/** What the ledger lends its group commit (src/storage/ledger-host.ts): its log, and what happens around a commit. */
export type CommitHost = LedgerHost & {
  log(): LogAppender;
  /** Where a commit is kept from before its D1 batch is sent (chain/commit-journal.ts). */
  journal: CommitJournal;
  /** Records the new head (and hands the rows to the activity rollups, which count them later); called with no await after the log's apply, so one storage transaction keeps head and tree. */
  advance(head: Head, rows: readonly EventRow[]): void;
  /** After a commit is in D1: wake the streams, schedule witness rounds. Never awaited. */
  committed(): void;
  /** D1 holds the chain up to `head`, during a backlog (chain/commit-backlog.ts): kept for the next start. */
  indexed(head: Head): void;
  /** After a failed batch: reload the head, in case the commit landed and only its answer was lost. */
  recover(): Promise<void>;
  /** The arm a commit received at `ms` is written to (storage/commit-arms.ts): a period, or null for the main tables. */
  commitArm(ms: number): Arm;
};

/**
 * The ledger's commit lock and group commit. Concurrent appends queue up and
 * are committed together: journaled in the ledger's own storage, then one D1
 * batch; the head moves only after D1 said yes. While D1 lags, commits are
 * answered once journaled and indexed behind (chain/commit-backlog.ts).
 * Waiters on the lock are served in arrival order, so a long stream of
 * appends cannot starve an erasure or a purge.
 */
export class GroupCommit {
  private queue: Pending[] = [];
  private lock: Promise<void> = Promise.resolve();
  private scheduled = false;
  /** Events and bytes queued or committing: what the admission bound counts. */
  private queued = { events: 0, bytes: 0 };
  /** Events committed per second, smoothed over recent commits. */
  private drainRate = 0;
  /** The last commit's received_at, in ms: each commit takes a later one (see commit()). */
  private lastReceivedMs = 0;
  /** The group being committed now. */
  private committing: readonly Pending[] = [];
  /** Appends given up by their workers (lost), by name, and when. */
  private readonly givenUp = new Map<string, number>();
  /** Commits answered before D1 has them, while it lags. */
  private readonly backlog: CommitBacklog;

  /** How long a commit's D1 batch may take before answers stop waiting on D1 (chain/commit-backlog.ts). */
  private lagMs: number;

  constructor(private readonly host: CommitHost) {
    this.lagMs = lagBound(host.env);
    this.backlog = new CommitBacklog({
      projectId: host.projectId,
      db: () => host.db(),
      lagMs: () => this.lagMs,
      indexed: (head) => host.indexed(head),
      committed: () => host.committed(),
    });
  }

  /**
   * At a start that finds a backlog (the mark in D1, or the head past what D1
   * holds): the journal's commits past the chain D1 holds, which a previous
   * instance may have answered, are indexed behind, with the mark set first
   * (`marked`: found), and answers keep going ahead of D1 until the backlog
   * is drained.
   */
  async resumeBacklog(chain: readonly Journaled[], marked: boolean): Promise<void> {
    if (!marked && chain.length === 0) return;
    await this.backlog.mark(marked);
    for (const { slot, entry } of chain) this.backlog.push({ entry, slot, events: entry.rows.length, bytes: 0, answer: null });
  }

  /** Resolves once D1 holds every commit made so far: what a read that found the backlog mark waits for. */
  indexed(): Promise<void> {
    return this.backlog.indexedTo(this.host.head().seq);
  }

  /** The rows of an append under an Idempotency-Key that is committed and not yet in D1, or null. */
  keyedAhead(key: string): Promise<{ requestHash: string | null; rows: EventRow[] }> | null {
    return this.backlog.keyed(key);
  }

  /**
   * At a start: the last commit was received at `ms` (chain/head-recovery.ts),
   * so every commit of this instance takes a later millisecond, even on a
   * machine whose clock is behind the one that made it (a Durable Object moves
   * between machines). A time further ahead than RESUME_AHEAD_MS is a clock
   * gone wrong, not skew: commits then go by this machine's clock again.
   */
  resumeAfter(ms: number | null): void {
    if (ms === null || ms > Date.now() + RESUME_AHEAD_MS) return;
    this.lastReceivedMs = Math.max(this.lastReceivedMs, ms);
  }

  /** Runs work while holding the commit lock, once D1 holds every commit: what runs there reads and changes D1. */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    return this.locked(async () => {
      await this.backlog.drained();
      return work();
    });
  }

  private locked<T>(work: () => Promise<T>): Promise<T> {
    const run = this.lock.then(work);
    this.lock = run.then(
      () => {},
      () => {},
    );
    return run;
  }

  /** The events as rows of the chain, once they are committed. */
  enqueue(events: NewEvent[], idempotencyKey: string | null = null, requestHash: string | null = null, bytes = 0, token: string | null = null): Promise<EventRow[]> {
    if (token !== null && this.givenUp.has(token)) return Promise.reject(new GivenUpAppend());
    this.queued.events += events.length;
    this.queued.bytes += bytes;
    let settle!: Pick<Pending, "resolve" | "reject">;
    const outcome = new Promise<EventRow[]>((resolve, reject) => (settle = { resolve, reject }));
    this.queue.push({ events, idempotencyKey, requestHash, token, bytes, ...settle, outcome });
    this.schedule();
    return outcome.finally(() => {
      this.queued.events -= events.length;
      this.queued.bytes -= bytes;
    });
  }

  /**
   * After a worker's call with the append named `token` (sent at `sentAt`, by
   * its clock) failed: its rows once committed, or null when nothing of it was
   * stored and never will be. An append still queued is dropped; one being
   * committed is answered when its commit is. One this ledger does not hold
   * reached an instance before this one, whose journaled commit this one's
   * start sent again, or it has not arrived: it is given up here, so that it is
   * refused should it still arrive, and looked for in D1, which gives it up
   * there too (landed-appends.ts).
   */
  lost(token: string, sentAt: number): Promise<ShapeRow[] | null> {
    return this.backlog.holding(token) ?? this.settle(token) ?? findLandedAppend(this.host.db(), this.host.projectId, token, sentAt);
  }

  private settle(token: string): Promise<EventRow[] | null> | undefined {
    const committing = this.committing.find((p) => p.token === token);
    if (committing) return committing.outcome.then((rows) => rows, () => null);
    // From here on the name is refused, whether this ledger holds the append or it is yet to arrive.
    const now = Date.now();
    for (const [name, at] of this.givenUp) if (at < now - GIVEN_UP_MS) this.givenUp.delete(name);
    this.givenUp.set(token, now);
    const queued = this.queue.findIndex((p) => p.token === token);
    if (queued < 0) return undefined;
    const [dropped] = this.queue.splice(queued, 1);
    dropped.reject(new GivenUpAppend());
    return Promise.resolve(null);
  }

  /** What waits to be committed, and how fast it has been going. */
  load(): { events: number; bytes: number; drainRate: number } {
    const behind = this.backlog.load();
    return { events: this.queued.events + behind.events, bytes: this.queued.bytes + behind.bytes, drainRate: this.drainRate };
  }

  /** Everything queued while the lock was busy goes into the next batch. */
  private schedule() {
    if (this.scheduled || this.queue.length === 0) return;
    this.scheduled = true;
    void this.locked(async () => {
      this.scheduled = false;
      const group: Pending[] = [];
      let size = 0;
      while (this.queue.length > 0 && (group.length === 0 || size + this.queue[0].events.length <= MAX_GROUP_EVENTS)) {
        const next = this.queue.shift()!;
        size += next.events.length;
        group.push(next);
      }
      const started = Date.now();
      this.committing = group;
      await this.commit(group).finally(() => (this.committing = []));
      const seconds = Math.max(0.001, (Date.now() - started) / 1000);
      this.drainRate = this.drainRate === 0 ? size / seconds : 0.8 * this.drainRate + 0.2 * (size / seconds);
    }).finally(() => this.schedule());
  }

  private async commit(group: Pending[]) {
    if (this.backlog.active()) return this.commitAhead(group);
    const { host } = this;
    /** The group's rows as sealed, one slice per append, and the last of them: known once sealing is done. */
    let sealed: { slices: EventRow[][]; last: EventRow } | null = null;
    let lagged = false;
    try {
      const rows = await this.seal(group);
      const last = rows[rows.length - 1];
      const { entry, slices } = this.entryOf(group, rows);
      sealed = { slices, last };
      // Stored before D1 is sent anything (the output gate would hold the batch until then too; sync() says so
      // here): from there a stop of the runtime loses nothing, and the next start sends the batch again or finds
      // it landed (commit-journal.ts).
      host.journal.write(entry);
      const db = host.db();
      const stored = host.storage.sync();
      // The batch is sent first, then the new leaves are hashed while D1 writes (hashing first held the batch back
      // by as long); a failed batch just drops them.
      let sent = 0;
      const batch = stored.then(() => ((sent = Date.now()), db.batch(journalStatements(db, host.projectId, entry))));
      const [leaves] = await Promise.all([stored.then(() => host.log().prepare(rows)), batch]);
      // No await between the tree and the head: one storage transaction stores both or neither.
      host.log().apply(leaves);
      host.advance({ seq: last.seq, hash: last.hash }, rows);
      lagged = Date.now() - sent > this.lagMs;
    } catch (error) {
      // A D1 batch is one transaction: all of it was stored or none. Which one, only the database knows when the
      // answer itself was lost (a dropped connection, a reset after the commit): recover reads the rows past the
      // head and adopts exactly this commit's, if they landed. Then it is answered as stored: told "nothing
      // stored", the client's retry would store every event twice.
      await host.recover().catch(() => {});
      const head = host.head();
      if (!sealed || head.seq !== sealed.last.seq || head.hash !== sealed.last.hash) {
        // Answered as not stored (or not known), so never sent again by a later start: a retry may store it anew.
        // Storage that cannot even do this is failing the object; its appends' workers give them up in D1.
        this.forget();
        const others = await this.withoutGivenUp(group, error);
        if (others === null) group.forEach((p) => p.reject(error));
        else if (others.length > 0) await this.commit(others);
        return;
      }
    }
    const { slices } = sealed;
    group.forEach((p, i) => p.resolve(slices[i]));
    host.committed();
    if (lagged) await this.startBacklog();
  }

  /** After a batch slower than the lag bound: the mark, and from then on answers once journaled. Not written, commits go on as before. */
  private async startBacklog() {
    try {
      await this.backlog.mark();
      this.host.indexed(this.host.head());
    } catch (error) {
      console.error(`ledger ${this.host.projectId}: the backlog mark could not be written; answers keep waiting on D1`, error);
    }
  }

  /**
   * A commit during a backlog: sealed, journaled in its own slot, in the
   * chain, and handed to the backlog, which answers it now or once it is
   * indexed. Until the head moves, a failure stores nothing.
   */
  private async commitAhead(group: Pending[]) {
    const { host } = this;
    const slot = this.backlog.freeSlot();
    let item: Backlogged;
    try {
      const rows = await this.seal(group);
      const { entry, slices } = this.entryOf(group, rows);
      host.journal.write(entry, slot);
      await host.storage.sync();
      const leaves = await host.log().prepare(rows);
      host.log().apply(leaves);
      const last = rows[rows.length - 1];
      host.advance({ seq: last.seq, hash: last.hash }, rows);
      const events = group.reduce((n, p) => n + p.events.length, 0);
      const bytes = group.reduce((n, p) => n + p.bytes, 0);
      item = { entry, slot, events, bytes, answer: () => group.forEach((p, i) => p.resolve(slices[i])) };
    } catch (error) {
      this.forget(slot);
      group.forEach((p) => p.reject(error));
      return;
    }
    this.backlog.push(item);
  }

  /** Clears a commit answered as not stored from the journal (its slot, or all of it); storage that cannot is failing the object. */
  private forget(slot?: number) {
    try {
      this.host.journal.clear(slot);
    } catch (clearError) {
      console.error(`ledger ${this.host.projectId}: a refused commit's journal could not be cleared`, clearError);
    }
  }

  /** The group's events as rows of the chain after the head, received at this commit's millisecond. */
  private async seal(group: Pending[]): Promise<EventRow[]> {
    const ring = await loadKeyring(this.host.env.SIGNING_KEYS);
    // One millisecond per commit at most: a located id carries its commit's instant (model/event-id.ts), so
    // two commits never share one and ids stay distinct without an index to refuse a repeat (migration 0029).
    // It also keeps receive times from stepping back when the clock does, while this ledger runs.
    const receivedMs = Math.max(Date.now(), this.lastReceivedMs + 1);
    // Taken even if the batch fails: its answer may be lost while its rows landed (host.recover adopts them).
    this.lastReceivedMs = receivedMs;
    return sealEvents(ring, this.host.projectId, this.host.head(), group.flatMap((p) => p.events), new Date(receivedMs).toISOString());
  }

  /** A sealed group's journal entry, and its rows one slice per append. */
  private entryOf(group: Pending[], rows: EventRow[]): { entry: JournalEntry; slices: EventRow[][] } {
    let offset = 0;
    const slices = group.map((p) => rows.slice(offset, (offset += p.events.length)));
    // An empty slice spans nothing (first past last).
    const span = (slice: EventRow[]) => (slice.length === 0 ? { first: 1, last: 0 } : { first: slice[0].seq, last: slice[slice.length - 1].seq });
    const keyed = group.flatMap((p, i) => (p.idempotencyKey === null ? [] : [{ key: p.idempotencyKey, requestHash: p.requestHash, ...span(slices[i]) }]));
    const named = group.flatMap((p, i) => (p.token === null || slices[i].length === 0 ? [] : [{ token: p.token, ...span(slices[i]) }]));
    const arm = this.host.commitArm(Date.parse(rows[0].received_at));
    return { entry: { after: this.host.head(), rows, named, keyed, ...(arm === null ? {} : { arm }) }, slices };
  }

  /**
   * After D1 refused the whole commit because it names an append whose worker
   * already gave up on it (its call failed while this ledger lived on, and it
   * answered "nothing stored": landed-appends.ts): those appends fail, and the
   * group's others, which nobody gave up on, are returned to be committed
   * again without them (sealed anew from the same head: nothing of the
   * refused batch was stored). Null when the refusal was anything else, or
   * named none of this group's appends; then the whole group fails as before.
   */
  private async withoutGivenUp(group: Pending[], error: unknown): Promise<Pending[] | null> {
    if (!isGivenUpRefusal(error)) return null;
    const tokens = group.flatMap((p) => (p.token === null ? [] : [p.token]));
    const given = await givenUpAmong(this.host.db(), tokens).catch(() => new Set<string>());
    if (given.size === 0) return null;
    const refused = (p: Pending) => p.token !== null && given.has(p.token);
    group.filter(refused).forEach((p) => p.reject(error));
    return group.filter((p) => !refused(p));
  }
}
