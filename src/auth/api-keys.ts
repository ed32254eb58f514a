import { randomAlphanumeric, sha256Hex } from "../lib/crypto";
import { TtlCache } from "../lib/ttl-cache";
import { rememberShard } from "../storage/shards";

export const KEY_MARKER = "wtn_live";

/** `wtn_live_<prefix>_<secret>`: alphanumeric parts so the key splits cleanly on `_`. */
export interface ParsedKey {
  prefix: string;
  secret: string;
}

const KEY_PATTERN = /^wtn_live_([A-Za-z0-9]{8,32})_([A-Za-z0-9]{22,64})$/;

export function parseApiKey(key: string): ParsedKey | null {
  const m = KEY_PATTERN.exec(key);
  return m ? { prefix: m[1], secret: m[2] } : null;
}

/** 12-char prefix to find the row; 32 base62 chars of secret is ~190 bits. */
export async function generateApiKey() {
  const prefix = randomAlphanumeric(12);
  const secret = randomAlphanumeric(32);
  return { key: `${KEY_MARKER}_${prefix}_${secret}`, prefix, secretHash: await hashSecret(secret) };
}

export function hashSecret(secret: string): Promise<string> {
  return sha256Hex(secret);
}

export interface KeyRow {
  project_id: string;
  secret_hash: string;
  revoked_at: string | null;
  /** api_keys.scopes as stored (parseStoredScopes). */
  scopes: string;
  expires_at: string | null;
  /** The project's event shard, read with the key so routing costs no extra query. */
  shard: number;
}

/**
 * Key rows are cached per isolate for a few seconds: a D1 read on every ingest
 * would cost more than the ingest itself. The price is that a revocation takes
 * up to KEY_CACHE_SECONDS to reach isolates that saw the key just before.
 */
export const KEY_CACHE_SECONDS = 10;
const keyRows = new TtlCache<KeyRow>(KEY_CACHE_SECONDS * 1000);

/**
 * Prefixes D1 did not know, remembered briefly so a flood of made-up keys costs
 * one query per prefix per period, not one per request. Short, because a key
 * presented before it was created would be refused this long; bounded, so a
 * flood of distinct prefixes only pushes out older ones.
 */
export const UNKNOWN_KEY_CACHE_SECONDS = 5;
const unknownPrefixes = new TtlCache<true>(UNKNOWN_KEY_CACHE_SECONDS * 1000, 20_000);

/**
 * Concurrent misses of one prefix each query: sharing one in-flight promise
 * across requests is unsafe in workerd (it is cancelled with the request that
 * created it), and the window is one D1 round trip.
 */
export async function findKey(env: Env, prefix: string): Promise<KeyRow | null> {
  const cached = keyRows.get(prefix);
  if (cached) return cached;
  if (unknownPrefixes.get(prefix)) return null;
  const row = await env.DB.prepare(
    "SELECT k.project_id, k.secret_hash, k.revoked_at, k.scopes, k.expires_at, p.shard FROM api_keys k JOIN projects p ON p.id = k.project_id WHERE k.prefix = ?",
  )
    .bind(prefix)
    .first<KeyRow>();
  if (row) {
    keyRows.set(prefix, row);
    rememberShard(row.project_id, row.shard);
  } else unknownPrefixes.set(prefix, true);
  return row;
}

/** Drops a key from this isolate's cache: a revocation here takes effect here at once (elsewhere within KEY_CACHE_SECONDS). */
export function forgetKey(prefix: string): void {
  keyRows.delete(prefix);
}
