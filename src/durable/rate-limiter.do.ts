import { DurableObject } from "cloudflare:workers";
import { RateWindows, type RateState } from "../lib/rate-window";

/**
 * Per-IP request budget for everything but ingest (which the project ledger
 * limits per API key). One instance per IP, so the count is global, not per isolate.
 * Windows live in memory: an evicted limiter forgets at most one minute of counts.
 */
export class RateLimiter extends DurableObject<Env> {
  private readonly windows = new RateWindows();

  hit(limit: number): RateState {
    return this.windows.hit("ip", limit);
  }
}
