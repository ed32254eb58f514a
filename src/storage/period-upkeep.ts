/**
 * A shard's periods over their life (model/periods.ts), from the daily cron
 * (archive-check.ts), one shard at a time:
 * 1. made a period ahead (with PERIODS "on"): the current one and the next
 *    exist, the next made a week before its first commit (writers wait
 *    ARM_LEAD_MS after a period is made; storage/commit-arms.ts);
 * 2. sealing once its last day is the default window old (the oldest past
 *    one sooner when the shard is over its mark): from then the archive
 *    seals its rows whatever their windows, and keeps them there
 *    (archive-run.ts), reads taking the hot copy until
 * 3. dropped, once every project's rows in it are sealed: its tables go, in
 *    one batch, for the one billed row of its name.
 * Meanwhile, once past its grace (no commit lands in it any more), a period
 * kept has its search index merged into one segment (compactSearchIndex), as
 * FTS5 would never do for an index no longer written to: a search reads each
 * term once there, not once in each of the dozens of segments its week of
 * commits left (a probe of eight common terms over a quarter of a million
 * events: 7.6 ms before, 0.6 after). Once a period: a merged index takes one
 * step to see that nothing is left to merge. The current period's index is
 * merged the same way each day, after those: the segments of a day's commits
 * go into one, so a search over the current week reads few.
 * And a project's main tables' mark (MAIN_COMMIT_SQL) is taken away once it
 * holds no row there (its older rows archived, or moved): its reads then skip
 * the main tables as they skip a settled period, where the mark had them read
 * there on every page for good. The mark and a commit's rows are written in
 * one batch and taken away in one statement that looks for those rows, so a
 * commit there after it writes the mark again, and a read finds that in its
 * first batch (armSpans).
 * Each step is a check of what the shard holds, so a run stopped anywhere is
 * taken up by the next one. A period is sealed and dropped only once it is
 * past, so no commit can be writing to it then.
 */
import { armDb, armGrace, dropPeriod, isGonePeriod, makePeriod, PERIOD_MS, periodLength, periodOf, shardPeriods } from "../model/periods";
import { KEY_SPAN, seqEdge } from "../model/row-keys";
import { compactSearchIndex } from "../model/search-index";
import { periodWindowDays } from "./commit-arms";

export interface PeriodUpkeep {
  made: number[];
  sealing: number[];
  dropped: number[];
  /** Periods whose search index was merged (into one segment, unless `compactSteps` ran out first). */
  compacted: number[];
  /** Projects with rows in a period being sealed: their ledgers have work to do. */
  toSeal: string[];
  /** Main tables' marks taken away: projects with no row left there. */
  unmarked: number;
}

/** What the shard's periods need now, done: see the file's comment. */
export async function tendPeriods(env: Env, db: D1Database, now: Date, length = PERIOD_MS, overMark = false): Promise<PeriodUpkeep> {
  const done: PeriodUpkeep = { made: [], sealing: [], dropped: [], compacted: [], toSeal: [], unmarked: 0 };
  const current = periodOf(now.getTime(), length);
  let periods = await shardPeriods(db);
  // Off, none is made; those made before still seal and drop.
  for (const n of env.PERIODS === "on" ? [current, current + 1] : []) {
    if (periods.some((p) => p.n === n)) continue;
    if (await makePeriod(db, n, now)) done.made.push(n);
  }
  const windowMs = periodWindowDays(env) * 86_400_000;
  // A shard past its mark frees room by its oldest past period too, whatever the window (shard-pressure.ts).
  const early = overMark ? periods.find((p) => p.sealing_at === null && p.n < current)?.n : undefined;
  for (const p of periods) {
    if (p.sealing_at !== null || p.n >= current || (p.n !== early && (p.n + 1) * length + windowMs > now.getTime())) continue;
    await db.prepare("UPDATE periods SET sealing_at = ? WHERE n = ? AND sealing_at IS NULL").bind(now.toISOString(), p.n).run();
    done.sealing.push(p.n);
  }
  periods = await shardPeriods(db);
  for (const p of periods.filter((p) => p.sealing_at !== null && p.n < current)) {
    const unsealed = await unsealedProjects(db, p.n);
    if (unsealed.length === 0) {
      await dropPeriod(db, p.n);
      done.dropped.push(p.n);
    } else done.toSeal.push(...unsealed);
  }
  // With periods, a project's main tables hold its rows from before them: once none is left, no mark.
  if (periods.length > 0) done.unmarked = (await db.prepare(UNMARK_EMPTY_SQL).run()).meta.changes;
  // The periods kept and past their grace, newest first (the most searched), their indexes merged in steps of
  // 1,000 pages, COMPACT_STEPS in all: a first run over many periods goes on the next day. Then the periods still
  // taking commits (the current week, and the last one in its grace), with the steps left: FTS5's own merges leave a
  // week's index in a dozen segments, each asked for every term, so a search that matches nothing cost 1.1-1.5 times
  // the main tables' one index (test/bench/README.md). Merged once a day, what the day's commits add stays small; a
  // merge cut short by the steps goes on from there the next day.
  let steps = COMPACT_STEPS;
  const kept = periods.filter((p) => !done.dropped.includes(p.n) && p.n <= current);
  const isSettled = (p: { n: number }) => (p.n + 1) * length + armGrace(length) <= now.getTime();
  const order = [...kept.filter(isSettled).reverse(), ...kept.filter((p) => !isSettled(p)).reverse()];
  for (const p of order) {
    if (steps <= 0) break;
    const step = await compactSearchIndex(armDb(db, p.n), 1000, steps).catch((error: unknown) => {
      // Dropped meanwhile (by another run): nothing left to merge.
      if (isGonePeriod(error)) return { steps: 0, done: true };
      throw error;
    });
    steps -= Math.max(step.steps, 1);
    // One step that changed nothing: merged already.
    if (step.steps > 1 || !step.done) done.compacted.push(p.n);
  }
  return done;
}

/**
 * The minute cron's part (with PERIODS "on"): each shard's current period
 * made if it is not there. The daily run makes periods a week ahead, but a
 * fresh deployment, a shard just added, or a daily run that failed for a week
 * would leave commits in the main tables, whose rows the archive deletes
 * (billed), until the next daily run. One read of a few rows a shard a
 * minute; none once this isolate has seen the current period there.
 * Returns the shards it made one in.
 */
export async function currentPeriods(env: Env, shards: Array<{ shard: number; db: D1Database }>, now: Date): Promise<number[]> {
  if (env.PERIODS !== "on") return [];
  const length = periodLength(env);
  const current = periodOf(now.getTime(), length);
  const made: number[] = [];
  for (const { shard, db } of shards) {
    const key = `${shard}:${length}`;
    if (seenCurrent.get(key) === current) continue;
    if (!(await shardPeriods(db)).some((p) => p.n === current) && (await makePeriod(db, current, now))) made.push(shard);
    seenCurrent.set(key, current);
  }
  return made;
}

/** Per shard (and period length), the current period this isolate has seen listed. */
const seenCurrent = new Map<string, number>();

/** SQL: the main tables' marks of projects with no row there (no first seq on either path of their row ids: seqEdge), deleted. */
const UNMARK_EMPTY_SQL = `DELETE FROM main_commits WHERE ${seqEdge("main_commits.project_id", false)} IS NULL`;

/** Merge steps of 1,000 pages a daily run gives the periods' search indexes at most (some 0.1 s each at a million events). */
export const COMPACT_STEPS = 40;

/**
 * The projects with a row in period `n` past their sealed segments. A
 * period's rows are all keyed (commit-arms.ts), so each keyed project's
 * newest row there is one seek of its range of row ids, and its last sealed
 * seq one seek of the segments' index.
 */
export async function unsealedProjects(db: D1Database, n: number): Promise<string[]> {
  const { results } = await armDb(db, n)
    .prepare(
      "SELECT id FROM (SELECT k.project_id AS id, " +
        `(SELECT e.row_id - k.n * ${KEY_SPAN} FROM events e WHERE e.row_id BETWEEN k.n * ${KEY_SPAN} AND k.n * ${KEY_SPAN} + ${KEY_SPAN - 1} ORDER BY e.row_id DESC LIMIT 1) AS last, ` +
        "(SELECT max(s.last_seq) FROM archive_segments s WHERE s.project_id = k.project_id) AS sealed FROM project_keys k) " +
        "WHERE last IS NOT NULL AND last > coalesce(sealed, 0)",
    )
    .all<{ id: string }>();
  return results.map((r) => r.id);
}
