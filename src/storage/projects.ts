import { hotDaysSetting, MAX_HOT_DAYS, newProjectValues, PROJECT_INSERT } from "./project-row";
import { mostFreeShard } from "./shard-pressure";
import { rememberShard, shardDb } from "./shards";
import { PLACE_KEY_SQL } from "../model/row-keys";

/** DEFAULT_HOT_DAYS: a new project's hot window; empty or "off" keeps a new project's events all hot. */
export function defaultHotDays(env: Env): number | null {
  const { days, readable } = hotDaysSetting(env.DEFAULT_HOT_DAYS);
  if (!readable) console.error(`DEFAULT_HOT_DAYS ${JSON.stringify(env.DEFAULT_HOT_DAYS)} is not a whole number of days from 0 to ${MAX_HOT_DAYS}; using ${days}`);
  return days;
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
  const made = (await env.DB.prepare(PROJECT_INSERT).bind(...newProjectValues(projectId, target, defaultHotDays(env))).run()).meta.changes === 1;
  const row = await env.DB.prepare("SELECT shard FROM projects WHERE id = ?").bind(projectId).first<{ shard: number }>();
  // A new project's rows are keyed (model/row-keys.ts): its number in its shard comes before any of them.
  if (made) await shardDb(env, row!.shard).prepare(PLACE_KEY_SQL).bind(projectId).run();
  rememberShard(projectId, row!.shard);
  return row!.shard;
}

/** The operator's ingest budget for a project in events per minute (npm run projects:limits), or null for the default. */
export async function ingestEventsPerMinute(env: Env, projectId: string): Promise<number | null> {
  const row = await env.DB.prepare("SELECT ingest_events_per_minute AS value FROM projects WHERE id = ?").bind(projectId).first<{ value: number | null }>();
  return row?.value ?? null;
}
