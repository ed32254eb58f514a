import { createMiddleware } from "hono/factory";
import { ApiError } from "../lib/errors";
import type { RateState } from "../lib/rate-window";
import type { AppEnv } from "./app-env";
import { ledgerOf } from "../chain/ledger";
import { LeasedBudgets } from "../auth/rate-lease";
import { requestCost } from "../auth/rate-cost";
import { ensureCredential } from "./credential";

/** This isolate's leased share of each client IP's budget (the RateLimiter DO keeps the count). */
const budgets = new LeasedBudgets();

/**
 * The console's in-process /v1 calls (routes/console.ts): the page request that
 * made them already paid one unit, so its first call spends only what it costs
 * beyond that (a search, 4 more), never the unit again. Keyed by the Request
 * objects themselves, so nothing a client sends can claim it.
 */
const prepaid = new WeakMap<Request, number>();
const paidFor = new WeakSet<Request>();

export function paidByPage(inner: Request, page: Request): void {
  if (paidFor.has(page)) return;
  paidFor.add(page);
  prepaid.set(inner, 1);
}

export function clientIp(req: Request): string {
  return req.headers.get("CF-Connecting-IP") ?? "unknown";
}

export function isIngest(method: string, path: string): boolean {
  return method === "POST" && (path === "/v1/events" || path === "/v1/events/batch");
}

export function rateLimited(rate: RateState, cost = 1): ApiError {
  const message =
    cost === 1
      ? `Rate limit of ${rate.limit} requests per minute exceeded; retry in ${rate.reset} s`
      : `This request costs ${cost} of the ${rate.limit} units a minute allows and ${rate.remaining} are left; retry in ${rate.reset} s`;
  return new ApiError("RATE_LIMITED", message, { limit: rate.limit, retry_after: rate.reset, ...(cost === 1 ? {} : { cost }) });
}

/**
 * Writes the IETF RateLimit-* headers on every response, errors included.
 * Authenticated ingest is counted per API key by the project ledger (the
 * route sets c.var.rate), so its key is looked up first; everything else is
 * counted here, per client IP and by cost (rate-cost.ts), before anything
 * touches D1: a refused request runs no key lookup and no handler.
 */
export const rateLimit = createMiddleware<AppEnv>(async (c, next) => {
  c.set("rate", null);
  const ingest = isIngest(c.req.method, c.req.path);
  if (ingest) await ensureCredential(c);
  const keyScoped = ingest && c.get("credential")?.kind === "api_key";
  if (!keyScoped) {
    const limit = Number(c.env.RATE_LIMIT_OTHER_PER_MIN) || 1500;
    // A budget set below a price must not make that request impossible.
    const cost = Math.min(requestCost(c.req.method, c.req.path), limit) - (prepaid.get(c.req.raw) ?? 0);
    if (cost <= 0) return next();
    const key = `ip:${clientIp(c.req.raw)}`;
    const limiter = () => c.env.RATE_LIMITER.get(c.env.RATE_LIMITER.idFromName(key));
    const rate = await budgets.take(key, limit, (need) => limiter().lease(limit, need), Date.now(), cost);
    c.set("rate", rate);
    if (!rate.allowed) throw rateLimited(rate, cost);
  }
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
  // A console call's answer passed on (routes/console.ts) already says where the budget stands, after this request's own count.
  if (!rate || c.res.headers.has("RateLimit-Remaining")) return;
  c.res.headers.set("RateLimit-Limit", String(rate.limit));
  c.res.headers.set("RateLimit-Remaining", String(rate.remaining));
  c.res.headers.set("RateLimit-Reset", String(rate.reset));
  if (!rate.allowed) c.res.headers.set("Retry-After", String(rate.retryAfter ?? rate.reset));
});
