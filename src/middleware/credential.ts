import { createMiddleware } from "hono/factory";
import { parseApiKey, hashSecret } from "../lib/api-keys";
import { timingSafeEqual } from "../lib/crypto";
import { ApiError } from "../lib/errors";
import { TtlCache } from "../lib/ttl-cache";
import type { AppEnv, Credential } from "../types";
import { verifyEmbedToken } from "../lib/embed-token";

interface KeyRow {
  project_id: string;
  secret_hash: string;
  revoked_at: string | null;
}

/**
 * Key rows are cached per isolate for a few seconds: a D1 read on every ingest
 * would cost more than the ingest itself. The price is that a revocation takes
 * up to KEY_CACHE_SECONDS to reach isolates that saw the key just before.
 */
export const KEY_CACHE_SECONDS = 10;
const keyRows = new TtlCache<KeyRow>(KEY_CACHE_SECONDS * 1000);

async function findKey(env: Env, prefix: string): Promise<KeyRow | null> {
  const cached = keyRows.get(prefix);
  if (cached) return cached;
  const row = await env.DB.prepare("SELECT project_id, secret_hash, revoked_at FROM api_keys WHERE prefix = ?")
    .bind(prefix)
    .first<KeyRow>();
  if (row) keyRows.set(prefix, row);
  return row;
}

async function resolve(env: Env, header: string | undefined): Promise<Credential | string> {
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  if (!match) return "Send your API key as Authorization: Bearer <key>";
  const token = match[1];
  const parsed = parseApiKey(token);
  if (!parsed) {
    const embed = await verifyEmbedToken(env, token);
    return embed ?? "The API key or embed token is not valid";
  }
  const row = await findKey(env, parsed.prefix);
  // Hash even for unknown prefixes so both failures take the same time.
  const presented = await hashSecret(parsed.secret);
  if (!row || !timingSafeEqual(presented, row.secret_hash)) return "The API key is not valid";
  if (row.revoked_at) return "The API key has been revoked";
  return { kind: "api_key", projectId: row.project_id, prefix: parsed.prefix };
}

/** Works out who is calling without failing yet: the rate limiter needs to know first. */
export const resolveCredential = createMiddleware<AppEnv>(async (c, next) => {
  const result = await resolve(c.env, c.req.header("Authorization"));
  c.set("credential", typeof result === "string" ? null : result);
  c.set("credentialError", typeof result === "string" ? result : null);
  await next();
});

/** Any valid credential; embed tokens only where the route allows them. */
export function requireCredential(options: { allowEmbed: boolean }) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const credential = c.get("credential");
    if (!credential) throw new ApiError("UNAUTHORIZED", c.get("credentialError") ?? "Authentication required");
    if (credential.kind === "embed" && !options.allowEmbed) {
      throw new ApiError("FORBIDDEN", "Embed tokens can only read events; this endpoint needs an API key");
    }
    await next();
  });
}

/** The project of the verified credential; only call behind requireCredential. */
export function projectOf(credential: Credential | null): string {
  if (!credential) throw new ApiError("UNAUTHORIZED", "Authentication required");
  return credential.projectId;
}
