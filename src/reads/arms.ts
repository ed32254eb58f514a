/**
 * Reads of a project's hot rows over the shard's arms (model/periods.ts),
 * with the arms this isolate keeps with the project's shard
 * (storage/shards.ts, projectArms): a page of each arm merged in list order
 * (pageOverArms), or the first arm that holds an event (firstOverArms). A
 * shard with no period has one arm, read as before.
 */
import { mergePages, type ListPage, type Listed } from "../model/periods";
import { inProjectArms } from "../storage/shards";

/** A page of the project's hot rows: `page` read in each arm, merged (mergePages). */
export async function pageOverArms<R extends Listed>(env: Env, projectId: string, db: D1Database, limit: number, page: (db: D1Database) => Promise<ListPage<R>>): Promise<ListPage<R>> {
  return mergePages(await inProjectArms(env, projectId, db, page), limit);
}

/** The first arm's answer that is not null (an event is in one arm), in arm order. */
export async function firstOverArms<T>(env: Env, projectId: string, db: D1Database, read: (db: D1Database) => Promise<T | null>): Promise<T | null> {
  return (await inProjectArms(env, projectId, db, read)).find((r) => r !== null) ?? null;
}
