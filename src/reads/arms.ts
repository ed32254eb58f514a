/**
 * Reads of a project's hot rows over the shard's arms (model/periods.ts),
 * with the arms this isolate keeps with the project's shard and where the
 * project's rows lie in each (storage/shards.ts, projectArmSpans): a page
 * in list order from the arms that can hold it (pageOverArms), or the first
 * arm that holds an event (firstOverArms). A shard with no period has one
 * arm, read as before.
 */
import type { Cursor } from "../model/cursor";
import { TtlCache } from "../lib/ttl-cache";
import { overArms, pageOverSpans, type Arm, type ArmSpan, type Dates, type ListPage, type Listed, type ReachMemory } from "../model/periods";
import { withProjectArmSpans } from "../storage/shards";

/**
 * How many settled arms more than its first read took each filter's last
 * page held rows of, by project and filter (ReachMemory), as this isolate
 * saw them: a client walks a filter's pages one after another, and a
 * console or a feed asks the same page again and again. Kept a while, not
 * forever: the periods move on.
 */
const REACH = new TtlCache<number>(10 * 60_000, 10_000);

/** A filter's ReachMemory in REACH, under `key` (which says everything the page asks for but the cursor). */
function reachMemory(projectId: string, key: string): ReachMemory {
  const at = `${projectId}\u0000${key}`;
  return { more: REACH.get(at) ?? 0, learn: (more) => REACH.set(at, more) };
}

/**
 * A page of the project's hot rows after `cursor` (and `within` the dates its
 * filter asks for): `page` read in the arms that can hold rows of it
 * (pageOverSpans; `reach` arms from the top in the first read, a current
 * period among them, and as many more as the filter's last page needed:
 * `filter` names it, everything the page asks for but the cursor), told when
 * the arms read before ran out short of it, merged (mergePages). `together`:
 * the pages of several arms read at once, one an arm, given their spans
 * (and so the facts of settled arms: ArmFacts), or null where the page
 * cannot be (then `page` reads each arm).
 */
export async function pageOverArms<R extends Listed>(
  env: Env,
  projectId: string,
  db: D1Database,
  cursor: Cursor | null,
  limit: number,
  page: (db: D1Database, ranOut: boolean) => Promise<ListPage<R>>,
  within?: Dates,
  reach?: number,
  filter?: string,
  together?: (db: D1Database, arms: ArmSpan[]) => Promise<ListPage<R>[] | null>,
): Promise<ListPage<R>> {
  const memory = filter === undefined ? undefined : reachMemory(projectId, filter);
  return withProjectArmSpans(env, projectId, db, (spans) => {
    // `together` is given the arms' spans, their facts among them.
    const read = async (arms: Arm[], ranOut: boolean) =>
      (arms.length > 1 && together !== undefined ? await together(db, arms.map((arm) => spans.find((s) => s.arm === arm)!)) : null) ??
      overArms(db, (arm) => page(arm, ranOut), arms);
    return pageOverSpans(spans, cursor, limit, read, within, reach, memory);
  });
}

/** The first arm's answer that is not null (an event is in one arm), in arm order; arms known to hold no row of the project are not read. */
export async function firstOverArms<T>(env: Env, projectId: string, db: D1Database, read: (db: D1Database) => Promise<T | null>): Promise<T | null> {
  return withProjectArmSpans(env, projectId, db, async (spans) => {
    const arms = spans.filter((s) => (s.growing ? s.from !== null : s.hi !== null)).map((s) => s.arm);
    return (await overArms(db, read, arms)).find((r) => r !== null) ?? null;
  });
}
