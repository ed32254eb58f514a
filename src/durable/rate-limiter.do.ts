import { DurableObject } from "cloudflare:workers";
import type { Lease } from "../auth/rate-lease";
import { RateWindows } from "../auth/rate-window";

/** Most requests one lease covers: what one isolate can hold back from the others. */
export const MAX_LEASE = 50;

/**
 * Per-IP request budget for everything but ingest (which the project ledger
 * limits per API key). One instance per IP, so the count is global, not per
 * isolate. Isolates lease small blocks of the budget (see rate-lease.ts) rather
 * than asking once per request. Windows live in memory: an evicted limiter
 * forgets at most one minute of counts.
 */
export class RateLimiter extends DurableObject<Env> {
  private readonly windows = new RateWindows();

  /**
   * Grants a tenth of what is left, 1 to MAX_LEASE requests, or none when the
   * budget is spent: near the limit leases shrink to one request, so the limit
   * is exact where it matters.
   */
  lease(limit: number): Lease {
    const now = Date.now();
    const size = Math.max(1, Math.min(MAX_LEASE, Math.floor(this.windows.left("ip", limit, now) / 10)));
    return { ...this.windows.take("ip", limit, size, now), grantedAt: now };
  }
}
