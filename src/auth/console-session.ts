import { findKey, hashSecret, parseApiKey } from "./api-keys";
import { parseStoredScopes, type Scope } from "./scopes";
import { randomHex, sha256Hex, timingSafeEqual } from "../lib/crypto";

/**
 * Console sign-in sessions (table console_sessions, migration 0014). The
 * cookie holds only a random secret; the row is named by its hash and keeps the
 * API key sealed under a key derived from that secret, so the console can call
 * the API as the key while neither the table nor a forged cookie gives the key
 * away. Every request re-checks the key in the live key store: a revoked or
 * expired key ends the session. Signing out deletes the row.
 */
export const SESSION_COOKIE = "wtn_console";
/** Short-lived on purpose: a console left open on a shared screen stops working within the hour. */
export const SESSION_SECONDS = 3600;

export interface ConsoleSession {
  projectId: string;
  keyPrefix: string;
  scopes: Scope[];
  /** The API key itself, unsealed for this request only: the console calls the API as it. */
  apiKey: string;
  /** Sent back with every POST the console makes (forms and scripts). */
  csrf: string;
  expiresAt: string;
}

/** Why a session is over; each has a message the sign-in page shows (never text from the request). */
export type SessionEnd = "signed_out" | "session_expired" | "key_revoked" | "key_expired" | "invalid";

export const END_MESSAGES: Record<SessionEnd, string> = {
  signed_out: "You are signed out.",
  session_expired: "Your session expired. Sign in again to continue.",
  key_revoked: "The API key you signed in with has been revoked, so you were signed out. Sign in with another key.",
  key_expired: "The API key you signed in with has expired, so you were signed out. Sign in with another key.",
  invalid: "Your session is no longer valid (signed out elsewhere, or not one this service issued). Sign in again.",
};

const SECRET = /^[A-Za-z0-9_-]{43}$/;

function b64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function fromB64url(text: string): Uint8Array {
  return Uint8Array.from(atob(text.replaceAll("-", "+").replaceAll("_", "/")), (c) => c.charCodeAt(0));
}

const idOf = (secret: string) => sha256Hex(`witness-console-session:${secret}`);

async function sealKeyOf(secret: string): Promise<CryptoKey> {
  const raw = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`witness-console-seal:${secret}`));
  return crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]);
}

async function seal(secret: string, apiKey: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv }, await sealKeyOf(secret), new TextEncoder().encode(apiKey)));
  return `${b64url(iv)}.${b64url(sealed)}`;
}

async function unseal(secret: string, text: string): Promise<string | null> {
  const [iv, body] = text.split(".");
  try {
    const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: fromB64url(iv) }, await sealKeyOf(secret), fromB64url(body));
    return new TextDecoder().decode(plain);
  } catch {
    return null;
  }
}

/** The key's own verdict, worded as the API words it. */
async function checkKey(env: Env, apiKey: string) {
  const parsed = parseApiKey(apiKey.trim());
  if (!parsed) return { ok: false as const, message: "That is not a Witness API key (they look like wtn_live_<prefix>_<secret>)." };
  const row = await findKey(env, parsed.prefix);
  const presented = await hashSecret(parsed.secret);
  if (!row || !timingSafeEqual(presented, row.secret_hash)) return { ok: false as const, message: "That API key is not valid." };
  if (row.revoked_at) return { ok: false as const, message: "That API key has been revoked." };
  if (row.expires_at !== null && row.expires_at <= new Date().toISOString()) return { ok: false as const, message: `That API key expired at ${row.expires_at}.` };
  return { ok: true as const, row, prefix: parsed.prefix, key: `wtn_live_${parsed.prefix}_${parsed.secret}` };
}

/** Signs in: the cookie's secret and when the session ends (an hour, or sooner when the key expires sooner). */
export async function openSession(env: Env, apiKey: string): Promise<{ ok: true; secret: string; expiresAt: string } | { ok: false; message: string }> {
  const checked = await checkKey(env, apiKey);
  if (!checked.ok) return checked;
  const now = new Date().toISOString();
  const secret = b64url(crypto.getRandomValues(new Uint8Array(32)));
  const ends = new Date(Date.now() + SESSION_SECONDS * 1000).toISOString();
  const expiresAt = checked.row.expires_at !== null && checked.row.expires_at < ends ? checked.row.expires_at : ends;
  await env.DB.batch([
    // Sessions nobody signed out of: a few swept at each sign-in, so the table stays small without a cron.
    env.DB.prepare("DELETE FROM console_sessions WHERE id_hash IN (SELECT id_hash FROM console_sessions WHERE expires_at <= ? LIMIT 50)").bind(now),
    env.DB.prepare(
      "INSERT INTO console_sessions (id_hash, project_id, key_prefix, sealed_key, csrf_token, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
    ).bind(await idOf(secret), checked.row.project_id, checked.prefix, await seal(secret, checked.key), randomHex(32), now, expiresAt),
  ]);
  return { ok: true, secret, expiresAt };
}

interface Row {
  project_id: string;
  key_prefix: string;
  sealed_key: string;
  csrf_token: string;
  expires_at: string;
}

/** The session a cookie names, checked against the live key store; or why there is none (the row is then gone). */
export async function resumeSession(env: Env, secret: string): Promise<{ ok: true; session: ConsoleSession } | { ok: false; reason: SessionEnd }> {
  if (!SECRET.test(secret)) return { ok: false, reason: "invalid" };
  const id = await idOf(secret);
  const row = await env.DB.prepare("SELECT project_id, key_prefix, sealed_key, csrf_token, expires_at FROM console_sessions WHERE id_hash = ?").bind(id).first<Row>();
  if (!row) return { ok: false, reason: "invalid" };
  const end = async (reason: SessionEnd) => {
    await env.DB.prepare("DELETE FROM console_sessions WHERE id_hash = ?").bind(id).run();
    return { ok: false as const, reason };
  };
  if (row.expires_at <= new Date().toISOString()) return end("session_expired");
  const apiKey = await unseal(secret, row.sealed_key);
  if (apiKey === null) return end("invalid");
  const key = await findKey(env, row.key_prefix);
  if (!key || key.project_id !== row.project_id || key.revoked_at) return end("key_revoked");
  if (key.expires_at !== null && key.expires_at <= new Date().toISOString()) return end("key_expired");
  const session = { projectId: row.project_id, keyPrefix: row.key_prefix, scopes: parseStoredScopes(key.scopes), apiKey, csrf: row.csrf_token, expiresAt: row.expires_at };
  return { ok: true, session };
}

/** Signs out: the row goes, so the same cookie replayed later names nothing. */
export async function endSession(env: Env, secret: string): Promise<void> {
  if (!SECRET.test(secret)) return;
  await env.DB.prepare("DELETE FROM console_sessions WHERE id_hash = ?").bind(await idOf(secret)).run();
}

/** The session's CSRF token, compared in constant time. */
export function csrfMatches(session: ConsoleSession, presented: string | null | undefined): boolean {
  return typeof presented === "string" && presented.length === session.csrf.length && timingSafeEqual(presented, session.csrf);
}
