/** What the RateLimit-* headers report after one request was counted (or refused). */
export interface RateState {
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  reset: number;
  allowed: boolean;
  /** Seconds a refused client should wait when that is not the window's reset (another walk is running). */
  retryAfter?: number;
}

/**
 * One-minute windows per key, each starting at the key's first request after
 * the previous window ended (so a burst is never split across two windows).
 * Refused requests are not counted: a client that backs off regains its budget.
 */
export class RateWindows {
  private windows = new Map<string, { start: number; count: number }>();

  constructor(private readonly periodMs = 60_000) {}

  hit(key: string, limit: number, now = Date.now()): RateState {
    const { granted, remaining, resetAt } = this.take(key, limit, 1, now);
    return { limit, remaining, reset: secondsUntil(resetAt, now), allowed: granted === 1 };
  }

  /** What is left of key's budget now, counting nothing. */
  left(key: string, limit: number, now = Date.now()): number {
    const window = this.windows.get(key);
    return !window || now >= window.start + this.periodMs ? limit : Math.max(0, limit - window.count);
  }

  /**
   * Counts up to `want` requests at once (as many as are left); `remaining`
   * is what is left after them, `resetAt` the window's end (epoch ms).
   */
  take(key: string, limit: number, want: number, now = Date.now()): { granted: number; remaining: number; resetAt: number } {
    let window = this.windows.get(key);
    if (!window || now >= window.start + this.periodMs) {
      if (this.windows.size > 10_000) this.prune(now);
      window = { start: now, count: 0 };
      this.windows.set(key, window);
    }
    const granted = Math.max(0, Math.min(want, limit - window.count));
    window.count += granted;
    return { granted, remaining: Math.max(0, limit - window.count), resetAt: window.start + this.periodMs };
  }

  private prune(now: number) {
    for (const [key, w] of this.windows) if (now >= w.start + this.periodMs) this.windows.delete(key);
  }
}

export function secondsUntil(resetAt: number, now: number): number {
  return Math.max(1, Math.ceil((resetAt - now) / 1000));
}
