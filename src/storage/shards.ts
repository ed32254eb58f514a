/**
 * src/storage/: where a project's events live. Start here: the shard a
 * project's rows are on (this file; shard-move.ts and shard-copy*.ts move a
 * project between shards, shard-pressure.ts watches their size). The cold tier
 * is the archive: archive-segments.ts is its entry. Staged export objects are
 * staged-exports.ts; projects.ts creates a project.
 */
import { TtlCache } from "../lib/ttl-cache";

/**
 * The shard directory. DB is the control database (projects, keys, plans);
 * each project's events live on one event database bound as EVENTS_<n>, named
 * by projects.shard. Shard 0 is bound to the control database itself, so a
 * deployment that started with one database keeps its events where they are.
 */
const SHARD_BINDING = /^EVENTS_(\d+)$/;

/** How long an isolate trusts a project's shard; a move waits this long before deleting its source rows. */
export const SHARD_CACHE_SECONDS = 30;
const shardOfProject = new TtlCache<number>(SHARD_CACHE_SECONDS * 1000);

export class UnknownShardError extends Error {
  constructor(readonly shard: number) {
    super(`No event database is bound as EVENTS_${shard}`);
    this.name = "UnknownShardError";
  }
}

/** The shard numbers bound in this deployment, ascending. */
export function shardNumbers(env: Env): number[] {
  return Object.keys(env)
    .map((name) => SHARD_BINDING.exec(name))
    .flatMap((m) => (m ? [Number(m[1])] : []))
    .sort((a, b) => a - b);
}

export function shardDb(env: Env, shard: number): D1Database {
  const db = (env as unknown as Record<string, D1Database | undefined>)[`EVENTS_${shard}`];
  if (!db) throw new UnknownShardError(shard);
  return db;
}

/** Remembers a shard the caller already read with the project (the API-key lookup joins it). */
export function rememberShard(projectId: string, shard: number): void {
  shardOfProject.set(projectId, shard);
}

/** Forgets a cached shard in this isolate: the mover calls it after switching the directory. */
export function forgetShard(projectId: string): void {
  shardOfProject.delete(projectId);
}

/** The shard of a project, from this isolate's cache or the control database; null for an unknown project. */
export async function projectShard(env: Env, projectId: string): Promise<number | null> {
  const cached = shardOfProject.get(projectId);
  if (cached !== undefined) return cached;
  const row = await env.DB.prepare("SELECT shard FROM projects WHERE id = ?").bind(projectId).first<{ shard: number }>();
  if (!row) return null;
  shardOfProject.set(projectId, row.shard);
  return row.shard;
}

/** The event database of a project. Every read and write of events finds it here. */
export async function eventsDb(env: Env, projectId: string): Promise<D1Database> {
  const shard = await projectShard(env, projectId);
  if (shard === null) throw new Error(`Unknown project ${projectId}`);
  return shardDb(env, shard);
}
