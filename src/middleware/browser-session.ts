import type { Context } from "hono";

/**
 * What the console's and the portal's cookie sessions share: their cookie's
 * options and the same-origin check their POSTs must pass.
 */
const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** HttpOnly, SameSite=Strict, on `path`; Secure everywhere but plain-http localhost (wrangler dev), where a Secure cookie would never come back. */
export function sessionCookieOptions(c: Context, path: string, expires?: Date) {
  const url = new URL(c.req.url);
  const secure = !(url.protocol === "http:" && LOOPBACK.has(url.hostname));
  return { path, httpOnly: true, secure, sameSite: "Strict" as const, ...(expires ? { expires } : {}) };
}

/** A POST from the service's own pages: browsers send Origin with every POST; Sec-Fetch-Site where one is missing. */
export function sameOrigin(c: Context): boolean {
  const origin = c.req.header("Origin");
  if (origin) return origin === new URL(c.req.url).origin;
  return c.req.header("Sec-Fetch-Site") === "same-origin";
}
