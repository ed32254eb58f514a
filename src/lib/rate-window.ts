/** What the RateLimit-* headers report after one request was counted (or refused). */
export interface RateState {
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  reset: number;
  allowed: boolean;
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
    let window = this.windows.get(key);
    if (!window || now >= window.start + this.periodMs) {
      if (this.windows.size > 10_000) this.prune(now);
      window = { start: now, count: 0 };
      this.windows.set(key, window);
    }
    const start = window.start;
    const allowed = window.count < limit;
    if (allowed) window.count++;
    return {
      limit,
      remaining: Math.max(0, limit - window.count),
      reset: Math.max(1, Math.ceil((start + this.periodMs - now) / 1000)),
      allowed,
    };
  }

  private prune(now: number) {
    for (const [key, w] of this.windows) if (now >= w.start + this.periodMs) this.windows.delete(key);
  }
}
