import { secondsUntil, type RateState, type RateWindows } from "../lib/rate-window";

/** Most units one lease covers: what one isolate can hold back from the others. */
export const MAX_LEASE = 50;

/** Units a limiter counted in advance for one isolate, in the window ending at resetAt. */
export interface Lease {
  granted: number;
  /** Left in the limiter after this lease. */
  remaining: number;
  resetAt: number;
  /** The limiter's clock when it granted the lease: a window it just opened ends a full period later. */
  grantedAt: number;
}

/**
 * The limiter's side: at least `need` units (what the asking request still
 * lacks) plus a tenth of what is left, at most MAX_LEASE, or nothing. Near the
 * limit leases shrink to what the request needs, so the limit is exact where
 * it matters. All or nothing: a part of `need` could not admit the request and
 * would only strand units in one isolate while cheaper requests elsewhere wait.
 */
export function grantLease(windows: RateWindows, key: string, limit: number, need: number, now: number): Lease {
  const left = windows.left(key, limit, now);
  const size = left < need ? 0 : Math.min(left, Math.max(need, Math.min(MAX_LEASE, Math.floor(left / 10))));
  return { ...windows.take(key, limit, size, now), grantedAt: now };
}

interface Held {
  limit: number;
  /** Leased and not yet used by this isolate. */
  tokens: number;
  remaining: number;
  resetAt: number;
}

/** Tokens a waiting request took out of the pool, and the window they belong to. */
interface Reserved {
  tokens: number;
  resetAt: number;
}

/**
 * An isolate's share of per-client budgets kept by a limiter Durable Object.
 * A request spends `cost` tokens held here and asks the limiter only when too
 * few are left, so most requests skip the round trip to the limiter. Never
 * admits more than the limit: every token was counted by the limiter first and
 * is spent once. With one isolate the counts and RateLimit-Remaining are
 * exactly those of asking per request; with several, tokens another isolate
 * holds count as used (at most MAX_LEASE each), so a client may be refused
 * slightly early, never late.
 */
export class LeasedBudgets {
  private held = new Map<string, Held>();

  /** The request's RateState, from held tokens or (too few) a new lease of what it lacks. */
  take(key: string, limit: number, lease: (need: number) => Promise<Lease>, now = Date.now(), cost = 1): RateState | Promise<RateState> {
    const held = this.current(key, limit, now);
    if (held && held.tokens >= cost) return this.spend(held, cost, now);
    // Held and left in the limiter (its last word, which only falls within a window) cannot pay: refused, no round trip.
    if (held && held.tokens + held.remaining < cost) return this.refuse(held, now);
    // The tokens held here wait with this request, so concurrent requests cannot spend them meanwhile.
    const reserved: Reserved = { tokens: held?.tokens ?? 0, resetAt: held?.resetAt ?? 0 };
    if (held) held.tokens = 0;
    return lease(cost - reserved.tokens).then(
      (granted) => this.receive(key, limit, lease, cost, reserved, granted, now),
      (err) => {
        this.giveBack(key, limit, reserved, now);
        throw err;
      },
    );
  }

  private current(key: string, limit: number, now: number): Held | undefined {
    const held = this.held.get(key);
    if (held && held.limit === limit && now < held.resetAt) return held;
    if (held) this.held.delete(key);
    return undefined;
  }

  private spend(held: Held, cost: number, now: number): RateState {
    held.tokens -= cost;
    return { limit: held.limit, remaining: held.remaining + held.tokens, reset: secondsUntil(held.resetAt, now), allowed: true };
  }

  private refuse(held: Held, now: number): RateState {
    return { limit: held.limit, remaining: held.remaining + held.tokens, reset: secondsUntil(held.resetAt, now), allowed: false };
  }

  private giveBack(key: string, limit: number, reserved: Reserved, now: number) {
    const held = this.current(key, limit, now);
    if (held && held.resetAt === reserved.resetAt) held.tokens += reserved.tokens;
  }

  private receive(
    key: string,
    limit: number,
    lease: (need: number) => Promise<Lease>,
    cost: number,
    reserved: Reserved,
    granted: Lease,
    askedAt: number,
  ): RateState | Promise<RateState> {
    // The lease arrives after the request's clock was read; counting from then would report a 61 s reset.
    const now = Math.max(askedAt, granted.grantedAt);
    let held = this.current(key, limit, now);
    if (held && held.resetAt === granted.resetAt) {
      // Concurrent leases of one window: pool the tokens; the lowest remaining is the newest.
      held.remaining = Math.min(held.remaining, granted.remaining);
    } else {
      if (this.held.size >= 10_000) this.prune(now);
      held = { limit, tokens: 0, remaining: granted.remaining, resetAt: granted.resetAt };
      this.held.set(key, held);
    }
    // Reserved tokens of a window that ended meanwhile are void: the limiter counts the new one from zero.
    const voided = reserved.resetAt !== granted.resetAt && reserved.tokens > 0;
    held.tokens += granted.granted + (voided ? 0 : reserved.tokens);
    if (held.tokens >= cost) return this.spend(held, cost, now);
    // The lease was sized for a pool the new window voided: ask again in the new window.
    if (voided && held.tokens + held.remaining >= cost) return this.take(key, limit, lease, now, cost);
    return this.refuse(held, now);
  }

  private prune(now: number) {
    for (const [key, held] of this.held) if (now >= held.resetAt) this.held.delete(key);
    if (this.held.size >= 10_000) this.held.clear();
  }
}
