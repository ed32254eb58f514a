/**
 * Back-pressure at the ledger's door (issue 38): an append is admitted only
 * if the project's budget of events per minute has room for all of it and
 * the commit queue (events and bytes not yet committed) stays under its
 * bounds. A refused append stores nothing and tells the client when to
 * come back; nothing ever grows until the object is reset.
 *
 * The per-key budget (RATE_LIMIT_INGEST_PER_MIN requests a minute, 1,200 by
 * default, the spec's) is counted before this and stays as it is; the
 * project's budget counts events, so one key sending 1,000-event batches
 * and twenty keys sending single events share one honest ceiling.
 */
import { RateWindows, secondsUntil } from "../lib/rate-window";

/** The project budget when the operator set none: 10,000 events a second, a minute's worth. */
export const DEFAULT_EVENTS_PER_MINUTE = 600_000;
/**
 * The lowest budget an operator may set: the spec's 1,200 requests a minute
 * per key must stay possible for a key sending single events.
 */
export const MIN_EVENTS_PER_MINUTE = 1_200;
/**
 * Bounds of the commit queue. Ten full group commits of events, and 16 MiB
 * of request bodies (a Durable Object has 128 MB): past either, a burst
 * waits outside rather than in the object's memory.
 */
export const MAX_QUEUED_EVENTS = 10_000;
export const MAX_QUEUED_BYTES = 16 * 1024 * 1024;
/**
 * The longest an append may have waited to reach the ledger (from the moment
 * the worker handed it over) and still be taken. Past it, the object's own
 * inbox is the queue, which the bounds above cannot see: a burst faster than
 * the ledger commits piles up there, each waiting longer, until memory goes.
 * Refusing what waited too long (storing nothing) empties that inbox at the
 * cost of an answer each, so waits, and the memory they hold, stay bounded.
 * Generous, so a ledger busy with a long step does not refuse ordinary traffic.
 */
export const MAX_INBOX_WAIT_MS = 10_000;
/** How long the operator's setting is trusted before it is read again (one D1 read a minute per busy project). */
const SETTING_TTL_MS = 60_000;

export type Refusal = {
  reason: "project_events" | "ledger_busy";
  /** Seconds the client should wait. */
  retryAfter: number;
  /** project_events: the budget in events per minute; ledger_busy: the queue's bound in events. */
  limit: number;
  /** ledger_busy because the append waited this long to reach the ledger (MAX_INBOX_WAIT_MS), not because its queue was full. */
  waitedMs?: number;
};

export interface QueueLoad {
  events: number;
  bytes: number;
  /** Events committed per second lately (0 before the first commit): how fast the queue drains. */
  drainRate: number;
}

export class IngestAdmission {
  private readonly budget = new RateWindows();
  private setting: { value: number; readAt: number } | null = null;

  constructor(
    private readonly load: () => QueueLoad,
    /** The operator's per-project setting (projects.ingest_events_per_minute), or null for the default. */
    private readonly readSetting: () => Promise<number | null>,
  ) {}

  /** null: admitted (its events are counted against the budget); otherwise why not and when to retry. */
  async admit(events: number, bytes: number, now = Date.now(), sentAt: number | null = null): Promise<Refusal | null> {
    const waited = sentAt === null ? 0 : now - sentAt;
    if (waited > MAX_INBOX_WAIT_MS) {
      return { reason: "ledger_busy", retryAfter: Math.min(30, Math.ceil(waited / 1000)), limit: MAX_QUEUED_EVENTS, waitedMs: waited };
    }
    const queue = this.load();
    if (queue.events > 0 && (queue.events + events > MAX_QUEUED_EVENTS || queue.bytes + bytes > MAX_QUEUED_BYTES)) {
      // The time the queue ahead needs to drain, at the rate it has been draining.
      const seconds = queue.drainRate > 0 ? Math.ceil(queue.events / queue.drainRate) : 1;
      return { reason: "ledger_busy", retryAfter: Math.min(30, Math.max(1, seconds)), limit: MAX_QUEUED_EVENTS };
    }
    const limit = await this.limit(now);
    // All or nothing: a batch is never half admitted.
    if (this.budget.left("project", limit, now) < events) {
      const { resetAt } = this.budget.take("project", limit, 0, now);
      return { reason: "project_events", retryAfter: secondsUntil(resetAt, now), limit };
    }
    this.budget.take("project", limit, events, now);
    return null;
  }

  /** The budget in force: the operator's (never under the floor), else the default. */
  async limit(now = Date.now()): Promise<number> {
    if (!this.setting || now - this.setting.readAt > SETTING_TTL_MS) {
      const value = await this.readSetting().catch(() => this.setting?.value ?? null);
      this.setting = { value: value === null ? DEFAULT_EVENTS_PER_MINUTE : Math.max(MIN_EVENTS_PER_MINUTE, value), readAt: now };
    }
    return this.setting.value;
  }
}
