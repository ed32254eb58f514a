/** What the RateLimit-* headers report after one request was counted (or refused). */
export interface RateState {
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  reset: number;
  allowed: boolean;
}

/**
 * Fixed one-minute windows per key. Refused requests are not counted, so a
 * client that backs off regains its budget at the next window.
 */
export class RateWindows {
  private windows = new Map<string, { start: number; count: number }>();

  constructor(private readonly periodMs = 60_000) {}

  hit(key: string, limit: number, now = Date.now()): RateState {
    const start = now - (now % this.periodMs);
    let window = this.windows.get(key);
    if (!window || window.start !== start) {
      if (this.windows.size > 10_000) this.prune(start);
      window = { start, count: 0 };
      this.windows.set(key, window);
    }
    const allowed = window.count < limit;
    if (allowed) window.count++;
    return {
      limit,
      remaining: Math.max(0, limit - window.count),
      reset: Math.max(1, Math.ceil((start + this.periodMs - now) / 1000)),
      allowed,
    };
  }

  private prune(currentStart: number) {
    for (const [key, w] of this.windows) if (w.start !== currentStart) this.windows.delete(key);
  }
}
