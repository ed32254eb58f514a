import { cors } from "hono/cors";
import { createMiddleware } from "hono/factory";
import { ApiError } from "../lib/errors";
import type { AppEnv } from "./app-env";

/** Static one-segment paths under /v1/events that are not "read one event". */
const NOT_AN_EVENT_ID = new Set(["verify", "batch"]);

/** The three reads an embed token may call: list, search and get one event. */
export function isEmbedReadPath(path: string): boolean {
  const m = /^\/v1\/events(?:\/([^/]+))?\/?$/.exec(path);
  return m !== null && !NOT_AN_EVENT_ID.has(m[1] ?? "");
}

const readCors = cors({
  origin: "*",
  allowMethods: ["GET"],
  allowHeaders: ["Authorization"],
  exposeHeaders: ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After"],
  maxAge: 600,
});

/**
 * CORS for the embed reads only. It runs before the limiter and the route, so
 * 401 and 429 answers carry it too: the feed must be able to read them.
 * Credentials are a Bearer header, never cookies, so `*` is safe.
 */
export const embedReadCors = createMiddleware<AppEnv>(async (c, next) => {
  const method = c.req.method;
  if ((method === "GET" || method === "OPTIONS") && isEmbedReadPath(c.req.path)) return readCors(c, next);
  await next();
});

/**
 * Embed tokens are read-only on the three reads, whatever routes exist now or
 * later; each route's requireScope() says the same, this is the backstop.
 */
export const embedReadsOnly = createMiddleware<AppEnv>(async (c, next) => {
  const credential = c.get("credential");
  if (credential?.kind === "embed" && !(c.req.method === "GET" && isEmbedReadPath(c.req.path))) {
    throw new ApiError("FORBIDDEN", "Embed tokens can only read events; this endpoint needs an API key");
  }
  await next();
});
