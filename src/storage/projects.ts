import { randomHex } from "../lib/crypto";
import { MAX_HOT_DAYS } from "./archive-run";
import { mostFreeShard } from "./shard-pressure";
import { rememberShard, shardDb } from "./shards";

/** DEFAULT_HOT_DAYS: a new project's hot window; empty or "off" keeps a new project's events all hot. */
export function defaultHotDays(env: Env): number | null {
  const raw = (env.DEFAULT_HOT_DAYS ?? "").trim();
  if (raw === "" || raw === "off") return null;
  const days = Number(raw);
  if (Number.isSafeInteger(days) && days >= 0 && days <= MAX_HOT_DAYS) return days;
  console.error(`DEFAULT_HOT_DAYS ${JSON.stringify(raw)} is not a whole number of days from 0 to ${MAX_HOT_DAYS}; using 30`);
  return 30;
}

/**
 * Registers a project in the control database, on the given shard or else the
 * one with the most free bytes under its high-water mark, with the
 * deployment's default hot window. Idempotent: an existing project keeps its
 * shard and its window.
 */
export async function createProject(env: Env, projectId: string, shard?: number): Promise<number> {
  const target = shard ?? (await mostFreeShard(env));
  shardDb(env, target);
  // The log id is the project's public log address: random, so it reveals nothing about the project.
  await env.DB.prepare("INSERT OR IGNORE INTO projects (id, created_at, shard, log_id, hot_days) VALUES (?, ?, ?, ?, ?)")
    .bind(projectId, new Date().toISOString(), target, randomHex(16), defaultHotDays(env))
    .run();
  const row = await env.DB.prepare("SELECT shard FROM projects WHERE id = ?").bind(projectId).first<{ shard: number }>();
  rememberShard(projectId, row!.shard);
  return row!.shard;
}
