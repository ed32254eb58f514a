import { formatScopes, grants, parseStoredScopes, type Scope } from "./scopes";
import { forgetKey, generateApiKey } from "./api-keys";

/** A key as the keys API shows it: never its secret, nor a hash of it. */
export interface KeyInfo {
  prefix: string;
  scopes: Scope[];
  label: string | null;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  /** The admin key that made it; null when an operator script did. */
  created_by: string | null;
}

export const MAX_LABEL_CHARS = 100;

const COLUMNS = "prefix, scopes, label, created_at, expires_at, revoked_at, created_by";
type Row = Omit<KeyInfo, "scopes"> & { scopes: string };
// Field by field: a row read with more columns (revokeKey's audit_state) must not leak them into the answer.
const info = ({ prefix, scopes, label, created_at, expires_at, revoked_at, created_by }: Row): KeyInfo => ({
  prefix,
  scopes: parseStoredScopes(scopes),
  label,
  created_at,
  expires_at,
  revoked_at,
  created_by,
});

export async function createKey(
  env: Env,
  projectId: string,
  spec: { scopes: Scope[]; label: string | null; expires_at: string | null; created_by: string },
): Promise<KeyInfo & { key: string }> {
  const { key, prefix, secretHash } = await generateApiKey();
  const row = await env.DB.prepare(
    `INSERT INTO api_keys (prefix, project_id, secret_hash, created_at, scopes, label, expires_at, created_by, audit_state)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL) RETURNING ${COLUMNS}`,
  )
    .bind(prefix, projectId, secretHash, new Date().toISOString(), formatScopes(spec.scopes), spec.label, spec.expires_at, spec.created_by)
    .first<Row>();
  return { ...info(row!), key };
}

/** The project's keys, newest first, revoked ones included (they say when). */
export async function listKeys(env: Env, projectId: string): Promise<KeyInfo[]> {
  const { results } = await env.DB.prepare(`SELECT ${COLUMNS} FROM api_keys WHERE project_id = ? ORDER BY created_at DESC, prefix`).bind(projectId).all<Row>();
  return results.map(info);
}

/**
 * The project's newest live key that can read (read or admin), or null. An
 * embed token reads with its minting key's rights, so the local demo mints
 * from this one: the newest key whatever its scopes (after the README's first
 * step, an ingest-only one) would mint a token the feed cannot use.
 */
export async function newestReadingKey(env: Env, projectId: string, now = new Date()): Promise<KeyInfo | null> {
  const at = now.toISOString();
  const keys = await listKeys(env, projectId);
  return keys.find((k) => k.revoked_at === null && (k.expires_at === null || k.expires_at > at) && grants(k.scopes, "read")) ?? null;
}

/**
 * Revokes one of the project's keys (null: no such key in this project).
 * Revoking twice keeps the first time. This isolate forgets the key at once;
 * others within KEY_CACHE_SECONDS.
 */
export async function revokeKey(env: Env, projectId: string, prefix: string): Promise<{ key: KeyInfo; already: boolean; createdRecorded: boolean } | null> {
  const before = await env.DB.prepare(`SELECT ${COLUMNS}, audit_state FROM api_keys WHERE prefix = ? AND project_id = ?`)
    .bind(prefix, projectId)
    .first<Row & { audit_state: string | null }>();
  if (!before) return null;
  const createdRecorded = before.audit_state !== null;
  if (before.revoked_at) return { key: info(before), already: true, createdRecorded };
  const row = await env.DB.prepare(`UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE prefix = ? AND project_id = ? RETURNING ${COLUMNS}`)
    .bind(new Date().toISOString(), prefix, projectId)
    .first<Row>();
  forgetKey(prefix);
  return { key: info(row!), already: false, createdRecorded };
}

/**
 * Which of a key's lifecycle events the chain now holds. Set only after the
 * append: a crash between the two leaves it for the daily sweep, which may
 * then record that event a second time (at least once, never lost).
 */
export async function markKeyAudited(env: Env, prefix: string, state: "created" | "revoked"): Promise<void> {
  await env.DB.prepare("UPDATE api_keys SET audit_state = ? WHERE prefix = ?").bind(state, prefix).run();
}
