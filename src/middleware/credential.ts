import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { findKey, parseApiKey, hashSecret } from "../auth/api-keys";
import { timingSafeEqual } from "../lib/crypto";
import { ApiError } from "../lib/errors";
import type { Credential } from "../auth/credential";
import type { AppEnv } from "./app-env";
import type { AuditActor } from "../chain/self-audit";
import { verifyEmbedToken, type EmbedRefusal } from "../auth/embed-token";
import { findPortalSession, isPortalToken, portalAllows } from "../auth/portal";
import { grants, parseStoredScopes, type Scope } from "../auth/scopes";

const EMBED_REFUSALS: Record<EmbedRefusal, string> = {
  expired: "The embed token has expired; mint a new one",
  invalid: "The API key or embed token is not valid",
  key_revoked: "The API key that minted this embed token has been revoked",
  key_expired: "The API key that minted this embed token has expired",
  key_cannot_read: "The API key that minted this embed token cannot read (it lacks the read scope)",
};

type Refusal = { message: string; reason?: EmbedRefusal };

async function resolve(env: Env, header: string | undefined): Promise<Credential | Refusal> {
  const found = await resolveOrSay(env, header);
  return typeof found === "string" ? { message: found } : found;
}

async function resolveOrSay(env: Env, header: string | undefined): Promise<Credential | Refusal | string> {
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  if (!match) return "Send your API key as Authorization: Bearer <key>";
  const token = match[1];
  if (isPortalToken(token)) {
    const session = await findPortalSession(env, token);
    if (!session) return "This portal session has ended (it lasts an hour, or was signed out); ask your vendor for a new portal link";
    return { kind: "portal", projectId: session.projectId, organization: session.organization, abilities: session.abilities, sessionId: session.id, linkId: session.linkId };
  }
  const parsed = parseApiKey(token);
  if (!parsed) {
    const embed = await verifyEmbedToken(env, token);
    if (embed === null) return "The API key or embed token is not valid";
    return "refused" in embed ? { message: EMBED_REFUSALS[embed.refused], reason: embed.refused } : embed;
  }
  const row = await findKey(env, parsed.prefix);
  // Hash even for unknown prefixes so both failures take the same time.
  const presented = await hashSecret(parsed.secret);
  if (!row || !timingSafeEqual(presented, row.secret_hash)) return "The API key is not valid";
  if (row.revoked_at) return "The API key has been revoked";
  if (row.expires_at !== null && row.expires_at <= new Date().toISOString()) return `The API key expired at ${row.expires_at}`;
  return { kind: "api_key", projectId: row.project_id, prefix: parsed.prefix, scopes: parseStoredScopes(row.scopes) };
}

/**
 * Works out who is calling without failing yet (requireCredential fails).
 * Once per request: the limiter resolves ingest's key itself, as its scope.
 */
export async function ensureCredential(c: Context<AppEnv>): Promise<void> {
  if (c.get("credential") !== undefined) return;
  const result = await resolve(c.env, c.req.header("Authorization"));
  const refused = "message" in result ? result : null;
  c.set("credential", refused ? null : (result as Credential));
  c.set("credentialError", refused);
}

/** Runs after the limiter: a refused request never costs a key lookup in D1. */
export const resolveCredential = createMiddleware<AppEnv>(async (c, next) => {
  await ensureCredential(c);
  await next();
});

/**
 * A credential that may call this route: an API key holding `scope` (admin
 * holds every scope), or, where the route allows them, an embed token (which
 * only ever reads). Otherwise 403 FORBIDDEN with details.required_scope.
 */
export function requireScope(scope: Scope, options: { allowEmbed?: boolean } = {}) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const credential = c.get("credential");
    if (!credential) {
      const refused = c.get("credentialError");
      throw new ApiError("UNAUTHORIZED", refused?.message ?? "Authentication required", refused?.reason ? { reason: refused.reason } : undefined);
    }
    if (credential.kind === "embed") {
      if (options.allowEmbed) return next();
      throw new ApiError("FORBIDDEN", "Embed tokens can only read events; this endpoint needs an API key", { required_scope: scope });
    }
    // portalRoutesOnly let it this far: the route is one its abilities name.
    if (credential.kind === "portal") return next();
    if (!grants(credential.scopes, scope)) {
      throw new ApiError("FORBIDDEN", `This API key lacks the ${scope} scope this endpoint needs (it holds: ${credential.scopes.join(", ") || "none"})`, {
        required_scope: scope,
        key_scopes: credential.scopes,
      });
    }
    await next();
  });
}

/** The project of the verified credential; only call behind requireCredential. */
export function projectOf(credential: Credential | null): string {
  if (!credential) throw new ApiError("UNAUTHORIZED", "Authentication required");
  return credential.projectId;
}

/**
 * One declaration per route of who may call it: `security` goes into the
 * route's OpenAPI definition (the scope named as the ApiKey requirement's
 * role, as OpenAPI 3.1 allows), `guard` into its handler chain. A test walks
 * the document and calls every operation with every scope, so the two agree.
 */
export function access(scope: Scope, options: { allowEmbed?: boolean } = {}) {
  const security: Record<string, string[]>[] = [{ ApiKey: [scope] }];
  if (options.allowEmbed) security.push({ EmbedToken: [] });
  return { scope, security, guard: requireScope(scope, options) };
}

/** The caller as an API key; an embed token (or none) is a 403 saying `why` a key is needed. */
export function apiKeyOf(credential: Credential | null | undefined, why: string): Extract<Credential, { kind: "api_key" }> {
  if (credential?.kind !== "api_key") throw new ApiError("FORBIDDEN", why);
  return credential;
}

/** The self-audit actor of a request: the calling API key, by prefix, or the customer's portal session, by its link. */
export function auditActor(credential: Credential | null): AuditActor {
  if (credential?.kind === "portal") return { type: "portal", id: credential.linkId };
  return { type: "api_key", id: apiKeyOf(credential, "Admin actions need an API key").prefix };
}

/**
 * A portal session may call only the routes its abilities name
 * (src/auth/portal.ts), whatever routes exist now or later: the backstop
 * behind each route's own narrowing to the session's organization.
 */
export const portalRoutesOnly = createMiddleware<AppEnv>(async (c, next) => {
  const credential = c.get("credential");
  if (credential?.kind === "portal" && !portalAllows(credential.abilities, c.req.method, c.req.path)) {
    throw new ApiError("FORBIDDEN", `A portal session for organization ${credential.organization} may not call this endpoint (its abilities: ${credential.abilities.join(", ")})`);
  }
  await next();
});
