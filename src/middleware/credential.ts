import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { findKey, parseApiKey, hashSecret } from "../auth/api-keys";
import { timingSafeEqual } from "../lib/crypto";
import { ApiError } from "../lib/errors";
import type { AppEnv, Credential } from "../types";
import { verifyEmbedToken } from "../auth/embed-token";

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

/**
 * Works out who is calling without failing yet (requireCredential fails).
 * Once per request: the limiter resolves ingest's key itself, as its scope.
 */
export async function ensureCredential(c: Context<AppEnv>): Promise<void> {
  if (c.get("credential") !== undefined) return;
  const result = await resolve(c.env, c.req.header("Authorization"));
  c.set("credential", typeof result === "string" ? null : result);
  c.set("credentialError", typeof result === "string" ? result : null);
}

/** Runs after the limiter: a refused request never costs a key lookup in D1. */
export const resolveCredential = createMiddleware<AppEnv>(async (c, next) => {
  await ensureCredential(c);
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
