import { createMiddleware } from "hono/factory";
import { ApiError } from "../lib/errors";
import type { RateState } from "../auth/rate-window";
import type { AppEnv } from "../types";
import { ledgerOf } from "../chain/ledger";
import { LeasedBudgets } from "../auth/rate-lease";

/** This isolate's leased share of each client IP's budget (the RateLimiter DO keeps the count). */
const budgets = new LeasedBudgets();

export function clientIp(req: Request): string {
  return req.headers.get("CF-Connecting-IP") ?? "unknown";
}

export function isIngest(method: string, path: string): boolean {
  return method === "POST" && (path === "/v1/events" || path === "/v1/events/batch");
}

/** GET/HEAD with no side effect: not exports, which stage their batches in R2 as they stream. */
function isPlainRead(method: string, path: string): boolean {
  return (method === "GET" || method === "HEAD") && !path.startsWith("/v1/exports");
}

export function rateLimited(rate: RateState): ApiError {
  return new ApiError("RATE_LIMITED", `Rate limit of ${rate.limit} requests per minute exceeded; retry in ${rate.reset} s`, {
    limit: rate.limit,
    retry_after: rate.reset,
  });
}

/**
 * Writes the IETF RateLimit-* headers on every response, errors included.
 * Authenticated ingest is counted per API key by the project ledger (the
 * route sets c.var.rate); everything else is counted here, per client IP.
 */
export const rateLimit = createMiddleware<AppEnv>(async (c, next) => {
  c.set("rate", null);
  const keyScoped = isIngest(c.req.method, c.req.path) && c.get("credential")?.kind === "api_key";
  if (!keyScoped) {
    const limit = Number(c.env.RATE_LIMIT_OTHER_PER_MIN) || 1500;
    const key = `ip:${clientIp(c.req.raw)}`;
    const counted = budgets.take(key, limit, () => c.env.RATE_LIMITER.get(c.env.RATE_LIMITER.idFromName(key)).lease(limit));
    if (counted instanceof Promise && isPlainRead(c.req.method, c.req.path)) {
      // No token held here, so the limiter is asked. A plain read changes
      // nothing, so it runs meanwhile rather than after the round trip; a
      // refused read's answer is thrown away and the client gets the 429.
      const [rate] = await Promise.all([counted, next()]);
      c.set("rate", rate);
      if (!rate.allowed) throw rateLimited(rate);
      return;
    }
    c.set("rate", await counted);
  }
  const rate = c.get("rate");
  if (rate && !rate.allowed) throw rateLimited(rate);
  await next();
  const credential = c.get("credential");
  if (keyScoped && credential?.kind === "api_key" && !c.get("rate")) {
    // Refused before it reached the ledger (bad body): it still spends the key's budget.
    const ledger = ledgerOf(c.env, credential.projectId);
    c.set("rate", await ledger.countRequest(credential.prefix, ingestLimit(c.env)));
  }
});

export function ingestLimit(env: Env): number {
  return Number(env.RATE_LIMIT_INGEST_PER_MIN) || 1200;
}

export const rateLimitHeaders = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  const rate = c.get("rate");
  if (!rate) return;
  c.res.headers.set("RateLimit-Limit", String(rate.limit));
  c.res.headers.set("RateLimit-Remaining", String(rate.remaining));
  c.res.headers.set("RateLimit-Reset", String(rate.reset));
  if (!rate.allowed) c.res.headers.set("Retry-After", String(rate.reset));
});
