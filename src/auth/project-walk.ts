import { secondsUntil, type RateState, type RateWindows } from "../lib/rate-window";

/**
 * Units a minute one project's verifies and exports may draw, whatever the
 * IPs asking: at their price of 20 (rate-cost.ts), 30 walks a minute. Next to
 * the per-IP budget, which many IPs sharing one key would otherwise multiply.
 */
export const PROJECT_WALK_LIMIT = 600;
/**
 * How long a walk's lease lasts unless renewed. The request renews it every
 * WALK_RENEW_MS while it runs, so only a holder that stopped renewing (its
 * isolate crashed or was evicted) loses it, and blocks the project this long at most.
 */
export const WALK_TTL_MS = 60_000;
export const WALK_RENEW_MS = 15_000;
/** Longest Retry-After a refused walk is told: the running one's end is a guess. */
export const MAX_BUSY_RETRY_S = 30;

interface Holder {
  token: string;
  since: number;
  expiresAt: number;
}

/**
 * What the limiter answers a walk that asks to start: a token to renew and
 * release it with, or null and why not. `rate` is the project budget's state;
 * a refusal because another walk runs carries its own `retryAfter`.
 */
export interface WalkGrant {
  token: string | null;
  busy: boolean;
  rate: RateState;
}

/**
 * The one whole-project walk (verify or export) a project may run at a time:
 * a lease with an expiry, kept by the project's limiter instance. Verify and
 * export read every event of the project, page after page, on the shard every
 * other request of the project (and of its neighbours) uses; several at once
 * only queue behind each other there and slow everyone else.
 */
export class WalkLease {
  private holder: Holder | null = null;

  /**
   * All or nothing: a refused walk spends no units of the project budget, and
   * a busy project is refused before the budget is looked at.
   */
  start(windows: RateWindows, key: string, limit: number, cost: number, ttlMs: number, now: number): WalkGrant {
    const held = this.current(now);
    if (held) {
      const { remaining, resetAt } = windows.take(key, limit, 0, now);
      // As long as the running one has run so far: long walks are told to come back later.
      const guess = Math.min(MAX_BUSY_RETRY_S, secondsUntil(now + (now - held.since), now), secondsUntil(held.expiresAt, now));
      return { token: null, busy: true, rate: { limit, remaining, reset: secondsUntil(resetAt, now), allowed: false, retryAfter: guess } };
    }
    const enough = windows.left(key, limit, now) >= cost;
    const { remaining, resetAt } = windows.take(key, limit, enough ? cost : 0, now);
    const rate = { limit, remaining, reset: secondsUntil(resetAt, now), allowed: enough };
    if (!enough) return { token: null, busy: false, rate };
    const token = crypto.randomUUID();
    this.holder = { token, since: now, expiresAt: now + ttlMs };
    return { token, busy: false, rate };
  }

  /**
   * Extends the lease. A holder that was too slow to renew takes the project
   * back if no other walk started meanwhile; false when one did.
   */
  renew(token: string, ttlMs: number, now: number): boolean {
    const held = this.current(now);
    if (held && held.token !== token) return false;
    this.holder = { token, since: held?.since ?? now, expiresAt: now + ttlMs };
    return true;
  }

  /** Only the holder's token ends its lease: a late release of an expired one leaves its successor alone. */
  release(token: string): void {
    if (this.holder?.token === token) this.holder = null;
  }

  private current(now: number): Holder | null {
    if (this.holder && now >= this.holder.expiresAt) this.holder = null;
    return this.holder;
  }
}
