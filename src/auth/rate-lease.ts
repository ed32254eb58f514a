import { secondsUntil, type RateState } from "./rate-window";

/** Requests a limiter counted in advance for one isolate, in the window ending at resetAt. */
export interface Lease {
  granted: number;
  /** Left in the limiter after this lease. */
  remaining: number;
  resetAt: number;
  /** The limiter's clock when it granted the lease: a window it just opened ends a full period later. */
  grantedAt: number;
}

interface Held {
  limit: number;
  /** Leased and not yet used by this isolate. */
  tokens: number;
  remaining: number;
  resetAt: number;
}

/**
 * An isolate's share of per-client budgets kept by a limiter Durable Object.
 * A request spends a token held here and asks the limiter only when none is
 * left, so most requests skip the round trip to the limiter. Never admits more
 * than the limit: every token was counted by the limiter first. With one
 * isolate the counts and RateLimit-Remaining are exactly those of asking per
 * request; with several, tokens another isolate holds count as used (at most
 * MAX_LEASE each), so a client may be refused slightly early, never late.
 */
export class LeasedBudgets {
  private held = new Map<string, Held>();

  /** The request's RateState, from a held token or (none left) a new lease. */
  take(key: string, limit: number, lease: () => Promise<Lease>, now = Date.now()): RateState | Promise<RateState> {
    const held = this.current(key, limit, now);
    if (held && held.tokens > 0) return this.spend(held, now);
    // Spent, and the limiter had nothing left either: refused until the window ends, no round trip.
    if (held && held.remaining === 0) return { limit, remaining: 0, reset: secondsUntil(held.resetAt, now), allowed: false };
    return lease().then((granted) => this.receive(key, limit, granted, now));
  }

  private current(key: string, limit: number, now: number): Held | undefined {
    const held = this.held.get(key);
    if (held && held.limit === limit && now < held.resetAt) return held;
    if (held) this.held.delete(key);
    return undefined;
  }

  private spend(held: Held, now: number): RateState {
    held.tokens--;
    return { limit: held.limit, remaining: held.remaining + held.tokens, reset: secondsUntil(held.resetAt, now), allowed: true };
  }

  private receive(key: string, limit: number, lease: Lease, askedAt: number): RateState {
    // The lease arrives after the request's clock was read; counting from then would report a 61 s reset.
    const now = Math.max(askedAt, lease.grantedAt);
    let held = this.current(key, limit, now);
    if (held && held.resetAt === lease.resetAt) {
      // Concurrent leases of one window: pool the tokens; the lowest remaining is the newest.
      held.tokens += lease.granted;
      held.remaining = Math.min(held.remaining, lease.remaining);
    } else {
      if (this.held.size >= 10_000) this.prune(now);
      held = { limit, tokens: lease.granted, remaining: lease.remaining, resetAt: lease.resetAt };
      this.held.set(key, held);
    }
    if (held.tokens === 0) return { limit, remaining: 0, reset: secondsUntil(held.resetAt, now), allowed: false };
    return this.spend(held, now);
  }

  private prune(now: number) {
    for (const [key, held] of this.held) if (now >= held.resetAt) this.held.delete(key);
    if (this.held.size >= 10_000) this.held.clear();
  }
}
