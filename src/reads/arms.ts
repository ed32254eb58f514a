/**
 * Reads of a project's hot rows over the shard's arms (model/periods.ts),
 * with the arms this isolate keeps with the project's shard
 * (storage/shards.ts, projectArms): a page of each arm merged in list order
 * (pageOverArms), or the first arm that holds an event (firstOverArms). A
 * shard with no period has one arm, read as before.
 */
import { isGonePeriod, mergePages, overArms, type Arm, type ListPage, type Listed } from "../model/periods";
import { forgetArms, projectArms } from "../storage/shards";

/** `read` in each of the project's arms; when a period this isolate listed is gone, the shard's list is read again. */
async function inArms<T>(env: Env, projectId: string, db: D1Database, read: (arm: D1Database, n: Arm) => Promise<T>): Promise<T[]> {
  try {
    return await overArms(db, read, await projectArms(env, projectId));
  } catch (error) {
    if (!isGonePeriod(error)) throw error;
    forgetArms(projectId);
    return overArms(db, read, await projectArms(env, projectId));
  }
}

/** A page of the project's hot rows: `page` read in each arm, merged (mergePages). */
export async function pageOverArms<R extends Listed>(env: Env, projectId: string, db: D1Database, limit: number, page: (db: D1Database) => Promise<ListPage<R>>): Promise<ListPage<R>> {
  return mergePages(await inArms(env, projectId, db, page), limit);
}

/** The first arm's answer that is not null (an event is in one arm), in arm order. */
export async function firstOverArms<T>(env: Env, projectId: string, db: D1Database, read: (db: D1Database) => Promise<T | null>): Promise<T | null> {
  return (await inArms(env, projectId, db, read)).find((r) => r !== null) ?? null;
}
