/**
 * The customer's admin portal (issue 37, item 3): a vendor's admin key mints a
 * one-time link for one of its customers' organizations; the customer's IT
 * admin opens it and, in a session scoped to that organization, reads its
 * events, downloads an export and sets up their own streams, without the
 * vendor ever touching a SIEM credential.
 *
 * Links (table portal_links, migration 0025) are single-use and expire; a
 * session (portal_sessions) lasts an hour from redemption and never past
 * what its link allowed. Both tables keep only SHA-256 names of the secrets.
 * In the API a session is a credential of its own kind (auth/credential.ts)
 * that may call only the routes its abilities name (portalAllows), each
 * answering for its organization alone.
 */
import { randomHex, sha256Hex } from "../lib/crypto";
import { base64urlEncode } from "../sealing/receipt-signing";

export const ABILITIES = ["events", "exports", "streams"] as const;
export type Ability = (typeof ABILITIES)[number];

/** A link not redeemed in this long is dead (the default is a day). */
export const LINK_TTL = { default: 86_400, min: 60, max: 7 * 86_400 } as const;
/** A session: long enough to set up a SIEM, short enough that a forgotten tab stops working. */
export const SESSION_SECONDS = 3600;
export const PORTAL_COOKIE = "wtn_portal";
/** How a session's secret travels as a bearer token, from the portal's pages to the API in-process. */
const SESSION_TOKEN = /^wtn_psess_([A-Za-z0-9_-]{43})$/;
const LINK_TOKEN = /^[A-Za-z0-9_-]{43}$/;

export interface PortalLink {
  id: string;
  organization: string;
  abilities: Ability[];
  created_at: string;
  expires_at: string;
}

export interface PortalSession {
  id: string;
  linkId: string;
  projectId: string;
  organization: string;
  abilities: Ability[];
  csrf: string;
  expiresAt: string;
  /** The bearer token the portal's pages call the API with. */
  token: string;
}

/** 256 random bits, base64url (43 characters). */
const secret = (): string => base64urlEncode(crypto.getRandomValues(new Uint8Array(32)));

const linkHash = (token: string) => sha256Hex(`witness-portal-link:${token}`);
const sessionId = (secret: string) => sha256Hex(`witness-portal-session:${secret}`);

function parseAbilities(text: string): Ability[] {
  return text.split(",").filter((a): a is Ability => (ABILITIES as readonly string[]).includes(a));
}

/** Mints a link; the token is answered once and never stored. */
export async function createPortalLink(
  env: Env,
  projectId: string,
  input: { organization: string; abilities: Ability[]; ttlSeconds: number; createdBy: string },
  now = new Date(),
): Promise<{ link: PortalLink; token: string }> {
  const token = secret();
  const link: PortalLink = {
    id: `pl_${randomHex(12)}`,
    organization: input.organization,
    abilities: ABILITIES.filter((a) => input.abilities.includes(a)),
    created_at: now.toISOString(),
    expires_at: new Date(now.getTime() + input.ttlSeconds * 1000).toISOString(),
  };
  await env.DB.prepare(
    "INSERT INTO portal_links (id, project_id, organization, abilities, token_hash, created_by, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
  )
    .bind(link.id, projectId, link.organization, link.abilities.join(","), await linkHash(token), input.createdBy, link.created_at, link.expires_at)
    .run();
  return { link, token };
}

export type Redemption = { ok: true; session: PortalSession; secret: string } | { ok: false; reason: "unknown" | "used" | "expired" };

/**
 * Spends a link: one statement marks it used only if it was unused and alive,
 * so two tabs racing to open it get one session between them.
 */
export async function redeemPortalLink(env: Env, token: string, now = new Date()): Promise<Redemption> {
  if (!LINK_TOKEN.test(token)) return { ok: false, reason: "unknown" };
  const hash = await linkHash(token);
  const at = now.toISOString();
  const row = await env.DB.prepare(
    "UPDATE portal_links SET used_at = ? WHERE token_hash = ? AND used_at IS NULL AND expires_at > ? RETURNING id, project_id, organization, abilities, expires_at",
  )
    .bind(at, hash, at)
    .first<{ id: string; project_id: string; organization: string; abilities: string; expires_at: string }>();
  if (!row) {
    const seen = await env.DB.prepare("SELECT used_at FROM portal_links WHERE token_hash = ?").bind(hash).first<{ used_at: string | null }>();
    return { ok: false, reason: !seen ? "unknown" : seen.used_at ? "used" : "expired" };
  }
  const value = secret();
  const session: PortalSession = {
    id: await sessionId(value),
    linkId: row.id,
    projectId: row.project_id,
    organization: row.organization,
    abilities: parseAbilities(row.abilities),
    csrf: randomHex(16),
    expiresAt: new Date(now.getTime() + SESSION_SECONDS * 1000).toISOString(),
    token: `wtn_psess_${value}`,
  };
  await env.DB.prepare(
    "INSERT INTO portal_sessions (id, link_id, project_id, organization, abilities, csrf, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
  )
    .bind(session.id, session.linkId, session.projectId, session.organization, session.abilities.join(","), session.csrf, at, session.expiresAt)
    .run();
  return { ok: true, session, secret: value };
}

/** The live session a cookie's secret (or a wtn_psess_ token) names, or null. */
export async function findPortalSession(env: Env, secretOrToken: string, now = new Date()): Promise<PortalSession | null> {
  const value = SESSION_TOKEN.exec(secretOrToken)?.[1] ?? secretOrToken;
  if (!/^[A-Za-z0-9_-]{43}$/.test(value)) return null;
  const row = await env.DB.prepare("SELECT * FROM portal_sessions WHERE id = ? AND expires_at > ?")
    .bind(await sessionId(value), now.toISOString())
    .first<{ id: string; link_id: string; project_id: string; organization: string; abilities: string; csrf: string; expires_at: string }>();
  if (!row) return null;
  return {
    id: row.id,
    linkId: row.link_id,
    projectId: row.project_id,
    organization: row.organization,
    abilities: parseAbilities(row.abilities),
    csrf: row.csrf,
    expiresAt: row.expires_at,
    token: `wtn_psess_${value}`,
  };
}

export function isPortalToken(token: string): boolean {
  return SESSION_TOKEN.test(token);
}

export async function endPortalSession(env: Env, id: string): Promise<void> {
  await env.DB.prepare("DELETE FROM portal_sessions WHERE id = ?").bind(id).run();
}

/**
 * The API routes a portal session may call, and the ability each needs.
 * Anything else is refused whatever routes exist now or later; each route
 * then narrows what it answers to the session's organization.
 */
export function portalAllows(abilities: readonly Ability[], method: string, path: string): boolean {
  const need = portalAbilityFor(method, path);
  return need !== null && abilities.includes(need);
}

function portalAbilityFor(method: string, path: string): Ability | null {
  if (method === "GET" && (path === "/v1/events" || path === "/v1/events/search" || path === "/v1/events/feed")) return "events";
  if (method === "GET" && /^\/v1\/events\/[^/]+$/.test(path) && !/^\/v1\/events\/(verify|batch)$/.test(path)) return "events";
  if (method === "GET" && path === "/v1/exports") return "exports";
  if (path === "/v1/streams" && (method === "GET" || method === "POST")) return "streams";
  if (/^\/v1\/streams\/[^/]+$/.test(path) && (method === "GET" || method === "DELETE")) return "streams";
  if (/^\/v1\/streams\/[^/]+\/(pause|resume|test)$/.test(path) && method === "POST") return "streams";
  return null;
}
