import { largestProjects, measureShard, warnIfFull } from "./shard-pressure";
import { periodLength } from "../model/periods";
import { tendPeriods } from "./period-upkeep";
import { shardDb, shardNumbers } from "./shards";
import { rowsBySeq, shardProjects } from "../model/row-keys";

/**
 * The daily cron's part of archiving: it checks and sweeps, the ledgers archive
 * (archive-upkeep.ts). Per shard: measure it (log line from 80% of its mark);
 * over the mark, wake its largest project's ledger; wake every project whose
 * oldest hot event is past its window (a ledger without an alarm yet: made
 * before continuous archiving, its window just shortened, or idle since), and
 * every project with an archive, for a tidy pass (partial segments, companion
 * backfill, sweep of leftovers), and every project with rows in a period being
 * sealed (period-upkeep.ts, which also makes and drops the shard's periods). Waking is one short call per ledger, which
 * then works in its own alarms; at most MAX_WAKES a run, lagging ones first.
 */
export const MAX_WAKES = 5000;

async function lagging(env: Env, shard: number, now: number): Promise<string[]> {
  const windows = await env.DB.prepare("SELECT id, hot_days FROM projects WHERE shard = ? AND hot_days IS NOT NULL").bind(shard).all<{ id: string; hot_days: number }>();
  const days = new Map(windows.results.map((r) => [r.id, r.hot_days]));
  if (days.size === 0) return [];
  // The oldest hot row of each project: a seek or two a project (shardProjects).
  const { results } = await shardDb(env, shard)
    .prepare(
      `WITH RECURSIVE ${shardProjects("p")}
       SELECT id, (SELECT received_at FROM ${rowsBySeq({ project: "p.id", lo: "0", hi: null, limit: "1", columns: "e.received_at" })}) AS oldest FROM p`,
    )
    .all<{ id: string; oldest: string }>();
  return results.filter((r) => days.has(r.id) && Date.parse(r.oldest) < now - days.get(r.id)! * 86_400_000).map((r) => r.id);
}

export async function checkArchives(env: Env, now: Date): Promise<{ woken: number; left: number }> {
  const wake = new Set<string>();
  const tidy = new Set<string>();
  for (const shard of shardNumbers(env)) {
    const state = await measureShard(env, shard);
    warnIfFull(state, "daily check");
    // The shard's periods: made ahead, sealed once past the window (or over the mark), dropped once sealed (period-upkeep.ts).
    try {
      const periods = await tendPeriods(env, shardDb(env, shard), now, periodLength(env), state.size > state.mark);
      for (const id of periods.toSeal) wake.add(id);
    } catch (error) {
      // Writers keep to the main tables without a period; a stalled drop only keeps rows in D1 longer.
      console.error(`daily check: the periods of shard ${shard} could not be tended`, error);
    }
    if (state.size > state.mark) for (const p of await largestProjects(shardDb(env, shard), 1)) wake.add(p.project_id);
    for (const id of await lagging(env, shard, now.getTime())) wake.add(id);
    const archived = await shardDb(env, shard).prepare("SELECT DISTINCT project_id AS id FROM archive_segments").all<{ id: string }>();
    for (const { id } of archived.results) tidy.add(id);
  }
  const order = [...wake, ...[...tidy].filter((id) => !wake.has(id))];
  let woken = 0;
  for (const id of order.slice(0, MAX_WAKES)) {
    try {
      await env.LEDGER.get(env.LEDGER.idFromName(id)).archiveSoon();
      woken++;
    } catch (error) {
      // One ledger's trouble must not keep the others from their wake-up.
      console.error(`waking the archive of project ${id} failed`, error);
    }
  }
  if (order.length > MAX_WAKES) console.warn(`daily archive check: ${order.length - MAX_WAKES} projects left for the next run`);
  return { woken, left: Math.max(0, order.length - MAX_WAKES) };
}
