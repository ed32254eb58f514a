/**
 * A project's row in the control database, as a new project gets it: the one
 * definition both the worker (projects.ts) and the operator scripts
 * (src/scripts/lib.mjs, which write D1 with `wrangler d1 execute`) use. Node
 * loads this file as it is, so it imports only .ts files that import nothing.
 */
import { randomHex } from "../lib/crypto.ts";

/** tiering: how many days of events stay hot; null keeps them all (new projects get DEFAULT_HOT_DAYS). */
export const MAX_HOT_DAYS = 36500;

/** The hot window a DEFAULT_HOT_DAYS value gives a new project; empty or "off": all hot (null); unreadable: 30 days. */
export function hotDaysSetting(raw: string | null | undefined): { days: number | null; readable: boolean } {
  const value = (raw ?? "").trim();
  if (value === "" || value === "off") return { days: null, readable: true };
  const days = Number(value);
  if (/^\d+$/.test(value) && Number.isSafeInteger(days) && days <= MAX_HOT_DAYS) return { days, readable: true };
  return { days: 30, readable: false };
}

export const PROJECT_INSERT = "INSERT OR IGNORE INTO projects (id, created_at, shard, log_id, hot_days) VALUES (?, ?, ?, ?, ?)";

/**
 * PROJECT_INSERT's values for a new project. The log id is its public log
 * address: 128 random bits, so it reveals nothing about the project.
 */
export function newProjectValues(projectId: string, shard: number, hotDays: number | null, now = new Date()): [string, string, number, string, number | null] {
  return [projectId, now.toISOString(), shard, randomHex(16), hotDays];
}
