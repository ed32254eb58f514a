import { DurableObject } from "cloudflare:workers";
import { grantLease, type Lease } from "../auth/rate-lease";
import { RateWindows } from "../lib/rate-window";
import { WalkLease, type WalkGrant } from "../auth/project-walk";

export { MAX_LEASE } from "../auth/rate-lease";

/**
 * Per-IP budget (in units: see rate-cost.ts) for everything but ingest (which
 * the project ledger limits per API key). One instance per IP, so the count is
 * global, not per isolate. Isolates lease small blocks of the budget (see
 * rate-lease.ts) rather than asking once per request. Windows live in memory:
 * an evicted limiter forgets at most one minute of counts.
 *
 * An instance named for a project (`project:<id>`) keeps that project's
 * whole-project walks instead: the one verify or export running and the
 * budget they draw from (see project-walk.ts). Every walk asks it once, so
 * there is nothing to lease; an evicted one forgets at most the running walk.
 */
export class RateLimiter extends DurableObject<Env> {
  private readonly windows = new RateWindows();
  private readonly walk = new WalkLease();

  /** At least `need` units and a tenth of what is left, or none (see grantLease). */
  lease(limit: number, need = 1): Lease {
    return grantLease(this.windows, "ip", limit, need, Date.now());
  }

  startWalk(limit: number, cost: number, ttlMs: number): WalkGrant {
    return this.walk.start(this.windows, "project", limit, cost, ttlMs, Date.now());
  }

  renewWalk(token: string, ttlMs: number): boolean {
    return this.walk.renew(token, ttlMs, Date.now());
  }

  endWalk(token: string): void {
    this.walk.release(token);
  }
}
