import { DurableObject } from "cloudflare:workers";
import { grantLease, type Lease } from "../auth/rate-lease";
import { RateWindows } from "../auth/rate-window";

export { MAX_LEASE } from "../auth/rate-lease";

/**
 * Per-IP budget (in units: see rate-cost.ts) for everything but ingest (which
 * the project ledger limits per API key). One instance per IP, so the count is
 * global, not per isolate. Isolates lease small blocks of the budget (see
 * rate-lease.ts) rather than asking once per request. Windows live in memory:
 * an evicted limiter forgets at most one minute of counts.
 */
export class RateLimiter extends DurableObject<Env> {
  private readonly windows = new RateWindows();

  /** At least `need` units and a tenth of what is left, or none (see grantLease). */
  lease(limit: number, need = 1): Lease {
    return grantLease(this.windows, "ip", limit, need, Date.now());
  }
}
