import type { EventRow } from "../db/schema";
import { idTag } from "../model/event-id";
import { markStatement } from "../storage/own-writes";
import type { Head } from "./chain-check";
import { journalLanded, journalStatements, type JournalEntry } from "./commit-journal";
import { givenUpAmong, isGivenUpRefusal } from "./landed-appends";

/**
 * Commits answered before D1 has them, and their indexing (issue 38, item 3;
 * the plan: test/bench/README.md, "A journal in the ledger's own SQLite").
 *
 * A ledger answers after D1 while D1 keeps up. When a commit's D1 batch takes
 * longer than the lag bound (LAG_MS, or INGEST_LAG_MS), the ledger writes the project's backlog mark into its
 * shard (`ingest_backlog`, migration 0047), and from then on answers a commit
 * as soon as it is journaled in its own storage (chain/commit-journal.ts): the
 * commit is in the chain, and this backlog sends it to D1 behind the others,
 * in order, several commits a batch. Every read of the project's events
 * reads the mark in the same D1 batch as its rows (storage/own-writes.ts); a
 * read that finds it asks the ledger to index up to its head first (indexed),
 * so a list right after an answer shows it.
 *
 * The mark goes in the same batch that indexes the last of the backlog, once
 * a batch has come back within LAG_MS again; while that batch is in flight,
 * nothing is answered before D1 (a commit answered then would be left behind
 * by the mark's delete). So a read whose snapshot holds no mark saw every
 * commit answered before it began.
 *
 * A commit of the backlog is never answered "not stored": it is in the chain
 * and its journal. A batch D1 refuses is sent again, with a back-off, until it
 * lands; meanwhile the queue's bounds, which count the backlog, turn appends
 * away with 429s (chain/ingest-admission.ts).
 */

/** How long a commit's D1 batch may take before the ledger stops waiting on D1 to answer (INGEST_LAG_MS sets it). */
export const LAG_MS = 250;

/** The bound an operator set (wrangler.toml INGEST_LAG_MS), else LAG_MS. */
export function lagBound(env: Env): number {
  const ms = Number(env.INGEST_LAG_MS);
  return Number.isFinite(ms) && ms > 0 ? ms : LAG_MS;
}

/** Events one indexing batch carries at most: a few commits, well inside D1's limits on a batch. */
export const MAX_INDEX_EVENTS = 5000;

/** The longest wait between two tries of a batch D1 refused. */
const MAX_BACKOFF_MS = 30_000;

/** A commit journaled and in the chain, not yet in D1. */
export interface Backlogged {
  entry: JournalEntry;
  /** Its journal slot (chain/commit-journal.ts), free again once it is indexed. */
  slot: number;
  /** Its appends' sizes, which the commit queue's bounds count until it is indexed. */
  events: number;
  bytes: number;
  /** Answers its appends; null once answered (or for a commit a previous instance journaled). */
  answer: (() => void) | null;
}

/** What the backlog needs of its ledger. */
export interface BacklogHost {
  projectId: string;
  db(): D1Database;
  /** How long a batch may take and still count as D1 keeping up (lagBound). */
  lagMs(): number;
  /** After each batch lands: D1 holds the chain up to `head` (the ledger keeps it, for its next start). */
  indexed(head: Head): void;
  /** After each batch lands: what follows a commit (streams, alerts, the feed) follows its indexing. */
  committed(): void;
}

interface Attempt {
  items: Backlogged[];
  /** This batch deletes the mark. */
  clear: boolean;
}

export class CommitBacklog {
  private items: Backlogged[] = [];
  /** The items' events and bytes, kept as they come and go: the admission bound asks on every append. */
  private behind = { events: 0, bytes: 0 };
  /** The mark is in D1: answers may go before indexing. */
  private marked = false;
  /** A batch that deletes the mark is in flight: nothing is answered before D1 until it lands. */
  private clearing = false;
  /** The last batch came back within LAG_MS. */
  private lastFast = false;
  /** A batch sent and not known to have landed: sent again as it was, so "landed" means all of it. */
  private attempt: Attempt | null = null;
  private running: Promise<void> | null = null;
  private waiters: Array<{ seq: number; resolve: () => void }> = [];

  constructor(private readonly host: BacklogHost) {}

  /** Whether a commit may be answered as soon as it is journaled. */
  answersAhead(): boolean {
    return this.marked && !this.clearing;
  }

  /** Whether the ledger is in a backlog episode (the mark is in D1, or commits wait to be indexed). */
  active(): boolean {
    return this.marked || this.items.length > 0;
  }

  /** Events and bytes journaled and not yet indexed. */
  load(): { events: number; bytes: number } {
    return { ...this.behind };
  }

  /** The lowest journal slot no commit of the backlog holds. */
  freeSlot(): number {
    const taken = new Set(this.items.map((item) => item.slot));
    let slot = 0;
    while (taken.has(slot)) slot++;
    return slot;
  }

  /**
   * Writes the mark, after a commit whose batch took longer than LAG_MS (or at
   * a start that finds one: `known`). Under the commit lock, with nothing in
   * the backlog: every commit answered so far is in D1.
   */
  async mark(known = false): Promise<void> {
    if (!known) {
      const tag = await idTag(this.host.projectId);
      await this.host
        .db()
        .prepare("INSERT INTO ingest_backlog (project_id, since, tag) VALUES (?, ?, ?) ON CONFLICT DO NOTHING")
        .bind(this.host.projectId, new Date().toISOString(), tag)
        .run();
    }
    this.marked = true;
    this.lastFast = false;
  }

  /** Takes a journaled commit to index; answered now when answersAhead, else once indexed. */
  push(item: Backlogged): void {
    this.items.push(item);
    this.behind.events += item.events;
    this.behind.bytes += item.bytes;
    if (this.answersAhead()) this.answer(item);
    this.run();
  }

  /** The backlog's commit holding the append named `token`: its rows, once it is answered. */
  holding(token: string): Promise<EventRow[]> | null {
    for (const item of this.items) {
      const named = item.entry.named.find((n) => n.token === token);
      if (named) return this.settled(item).then(() => item.entry.rows.filter((r) => r.seq >= named.first && r.seq <= named.last));
    }
    return null;
  }

  /** The backlog's append under an Idempotency-Key, as D1 would give it once indexed: once it is answered. */
  keyed(key: string): Promise<{ requestHash: string | null; rows: EventRow[] }> | null {
    for (const item of this.items) {
      const k = item.entry.keyed.find((x) => x.key === key);
      if (k) return this.settled(item).then(() => ({ requestHash: k.requestHash, rows: item.entry.rows.filter((r) => r.seq >= k.first && r.seq <= k.last) }));
    }
    return null;
  }

  /** Resolves once D1 holds the chain up to `seq`. */
  indexedTo(seq: number): Promise<void> {
    const pending = this.items.some((item) => item.entry.rows[0].seq <= seq);
    if (!pending) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ seq, resolve }));
  }

  /** Resolves once the backlog is empty. */
  drained(): Promise<void> {
    const last = this.items[this.items.length - 1];
    return last ? this.indexedTo(last.entry.rows[last.entry.rows.length - 1].seq) : Promise.resolve();
  }

  private settled(item: Backlogged): Promise<void> {
    // Answered: its mark covers it. Not yet: it is answered when indexed, or when answers go ahead again.
    return item.answer === null ? Promise.resolve() : this.indexedTo(item.entry.rows[0].seq);
  }

  private answer(item: Backlogged) {
    const answer = item.answer;
    item.answer = null;
    answer?.();
  }

  private run() {
    if (this.running) return;
    this.running = this.loop().finally(() => {
      this.running = null;
      if (this.items.length > 0) this.run();
    });
  }

  private async loop(): Promise<void> {
    let failures = 0;
    while (this.items.length > 0) {
      const attempt = (this.attempt ??= this.take());
      const started = Date.now();
      try {
        await this.send(attempt);
      } catch (error) {
        const landed = await this.landedAnyway(attempt);
        // Not landed: nothing of it was stored, so the next try may take more commits, and the mark stays.
        if (landed === "no") this.retake(attempt);
        if (landed !== "yes") {
          failures++;
          const wait = Math.min(MAX_BACKOFF_MS, 250 * 2 ** failures);
          console.error(`ledger ${this.host.projectId}: indexing seqs ${attempt.items[0].entry.rows[0].seq}- failed; again in ${wait} ms`, error);
          await new Promise((resolve) => setTimeout(resolve, wait));
          continue;
        }
        // Landed: only its answer was lost.
      }
      failures = 0;
      this.attempt = null;
      this.lastFast = Date.now() - started < this.host.lagMs();
      this.items.splice(0, attempt.items.length);
      for (const item of attempt.items) {
        this.behind.events -= item.events;
        this.behind.bytes -= item.bytes;
      }
      if (attempt.clear) {
        this.marked = false;
        this.clearing = false;
      }
      const last = attempt.items[attempt.items.length - 1].entry.rows;
      const head = { seq: last[last.length - 1].seq, hash: last[last.length - 1].hash };
      this.host.indexed(head);
      for (const item of attempt.items) this.answer(item);
      this.waiters = this.waiters.filter((w) => (w.seq <= head.seq ? (w.resolve(), false) : true));
      // Commits answered after D1 while the mark went: answered now.
      if (this.answersAhead()) this.items.forEach((item) => this.answer(item));
      this.host.committed();
    }
  }

  /** The next batch: the oldest commits, up to MAX_INDEX_EVENTS; it deletes the mark when it drains a backlog D1 keeps up with again. */
  private take(): Attempt {
    const items: Backlogged[] = [];
    let events = 0;
    for (const item of this.items) {
      if (items.length > 0 && events + item.entry.rows.length > MAX_INDEX_EVENTS) break;
      items.push(item);
      events += item.entry.rows.length;
    }
    const clear = this.marked && this.lastFast && items.length === this.items.length;
    if (clear) this.clearing = true;
    return { items, clear };
  }

  private async send(attempt: Attempt): Promise<void> {
    const db = this.host.db();
    const statements = () => {
      const all = attempt.items.flatMap((item) => journalStatements(db, this.host.projectId, item.entry));
      return attempt.clear ? [...all, db.prepare("DELETE FROM ingest_backlog WHERE project_id = ?").bind(this.host.projectId)] : all;
    };
    try {
      await db.batch(statements());
    } catch (error) {
      if (!(await this.withoutGivenUp(attempt, error))) throw error;
      await db.batch(statements());
    }
  }

  /** After a batch known not to have landed: the next try is taken anew, and answers go ahead again if this one was to delete the mark. */
  private retake(attempt: Attempt) {
    this.attempt = null;
    this.lastFast = false;
    if (!attempt.clear) return;
    this.clearing = false;
    this.items.forEach((item) => this.answer(item));
  }

  /**
   * D1 refuses a batch that names an append a worker gave up on. A commit of
   * the backlog is in the chain, so it is indexed without those names: the
   * worker looked in D1 itself, because it could not reach this ledger, before
   * the mark was written (with a mark, the look gives nothing up:
   * landed-appends.ts), and told its client nothing was stored. A retry
   * without an Idempotency-Key then stores its events a second time; that
   * double fault is logged here.
   */
  private async withoutGivenUp(attempt: Attempt, error: unknown): Promise<boolean> {
    if (!isGivenUpRefusal(error)) return false;
    const tokens = attempt.items.flatMap((item) => item.entry.named.map((n) => n.token));
    const given = await givenUpAmong(this.host.db(), tokens);
    if (given.size === 0) return false;
    console.error(`ledger ${this.host.projectId}: appends ${[...given].join(", ")} were given up by their workers but are in the chain; indexed without their names`);
    for (const item of attempt.items) item.entry.named = item.entry.named.filter((n) => !given.has(n.token));
    return true;
  }

  /** Whether D1 holds the attempt's batch although its answer failed: a batch is one transaction, so its first row says it for all. */
  private async landedAnyway(attempt: Attempt): Promise<"yes" | "no" | "unknown"> {
    try {
      return (await journalLanded(this.host.db(), this.host.projectId, attempt.items[0].entry)) ? "yes" : "no";
    } catch {
      return "unknown";
    }
  }
}

/** Whether the project's backlog mark is in its shard: read at a start, whose journal may hold commits answered before D1 had them. */
export async function backlogMarked(db: D1Database, projectId: string): Promise<boolean> {
  return (await markStatement(db, projectId).first()) !== null;
}
