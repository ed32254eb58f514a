import { randomHex } from "../lib/crypto";
import { leastFullShard, rememberShard, shardDb } from "./shards";

/**
 * Registers a project in the control database, on the given shard or else the
 * least-full one. Idempotent: an existing project keeps its shard.
 */
export async function createProject(env: Env, projectId: string, shard?: number): Promise<number> {
  const target = shard ?? (await leastFullShard(env));
  shardDb(env, target);
  // The log id is the project's public log address: random, so it reveals nothing about the project.
  await env.DB.prepare("INSERT OR IGNORE INTO projects (id, created_at, shard, log_id) VALUES (?, ?, ?, ?)")
    .bind(projectId, new Date().toISOString(), target, randomHex(16))
    .run();
  const row = await env.DB.prepare("SELECT shard FROM projects WHERE id = ?").bind(projectId).first<{ shard: number }>();
  rememberShard(projectId, row!.shard);
  return row!.shard;
}
