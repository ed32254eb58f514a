/**
 * src/storage/: where a project's events live. Start here: the shard a
 * project's rows are on (this file; shard-move.ts and shard-copy*.ts move a
 * project between shards, shard-pressure.ts watches their size). The cold tier
 * is the archive: archive-segments.ts is its entry. Staged export objects are
 * staged-exports.ts; projects.ts creates a project.
 */
import { TtlCache } from "../lib/ttl-cache";
import { armSpans, isGonePeriod, markedSpans, marksMatter, overArms, periodLength, shardArms, type Arm, type ArmSpan } from "../model/periods";
import { shardRowKey } from "../model/row-keys";
import { marksSeen, marksSeenYet, ownWritesDb } from "./own-writes";

/**
 * The shard directory. DB is the control database (projects, keys, plans);
 * each project's events live on one event database bound as EVENTS_<n>, named
 * by projects.shard. Shard 0 is bound to the control database itself, so a
 * deployment that started with one database keeps its events where they are.
 */
const SHARD_BINDING = /^EVENTS_(\d+)$/;

/** How long an isolate trusts a project's shard; a move waits this long before deleting its source rows. */
export const SHARD_CACHE_SECONDS = 30;

/**
 * What this isolate knows of where a project's events are: its shard, and
 * once a reader asked, its number there when its rows are keyed (the
 * shard's project_keys, migration 0045: row_id = that number x 2^40 + seq;
 * model/row-keys.ts), or null. The number is read from the shard the entry
 * names and kept in the same entry, so it is trusted no longer than the
 * shard is: a move that gives the project its number in another shard
 * switches both for every reader at once (the mover waits out
 * SHARD_CACHE_SECONDS before deleting the source rows).
 */
interface Place {
  shard: number;
  rowKey?: number | null;
  /** The shard's arms (model/periods.ts): null for the main tables, then each period; kept no longer than the shard. */
  arms?: Arm[];
  /** Where the project's rows lie in each arm (model/periods.ts, armSpans), read after the arms, kept with them. */
  spans?: ArmSpan[];
}
const placeOfProject = new TtlCache<Place>(SHARD_CACHE_SECONDS * 1000);

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
  placeOfProject.set(projectId, { shard });
}

/** Forgets a cached shard in this isolate: the mover calls it after switching the directory. */
export function forgetShard(projectId: string): void {
  placeOfProject.delete(projectId);
}

async function projectPlace(env: Env, projectId: string): Promise<Place | null> {
  const cached = placeOfProject.get(projectId);
  if (cached !== undefined) return cached;
  const row = await env.DB.prepare("SELECT shard FROM projects WHERE id = ?").bind(projectId).first<{ shard: number }>();
  if (!row) return null;
  const place: Place = { shard: row.shard };
  placeOfProject.set(projectId, place);
  return place;
}

/** The shard of a project, from this isolate's cache or the control database; null for an unknown project. */
export async function projectShard(env: Env, projectId: string): Promise<number | null> {
  return (await projectPlace(env, projectId))?.shard ?? null;
}

/**
 * A project's number in its shard when its rows are keyed there, else null:
 * what the list walks bind (model/row-keys.ts, KnownKey). One read of the
 * shard, then kept with the shard's entry, not past it.
 */
export async function projectRowKey(env: Env, projectId: string): Promise<number | null> {
  const place = await projectPlace(env, projectId);
  if (place === null) throw new Error(`Unknown project ${projectId}`);
  // Set on the cached entry itself: it expires with the shard it was read from.
  if (place.rowKey === undefined) place.rowKey = await shardRowKey(shardDb(env, place.shard), projectId);
  return place.rowKey;
}

/**
 * The arms a read of a project's hot rows reads (model/periods.ts): the main
 * tables (null), then each period the shard holds, oldest first. One read of
 * the shard, then kept with the shard's entry. A period is made well before
 * any row is written to it, so a list this old names every period a row can
 * be in; one dropped since is refused by D1 ("no such table"), and the reader
 * asks again (forgetArms).
 */
export async function projectArms(env: Env, projectId: string): Promise<Arm[]> {
  const place = await projectPlace(env, projectId);
  if (place === null) throw new Error(`Unknown project ${projectId}`);
  if (place.arms === undefined) {
    place.arms = await shardArms(shardDb(env, place.shard));
  }
  return place.arms;
}

/**
 * The project's arms with where its rows lie in each (model/periods.ts,
 * armSpans): one statement for the settled periods, none without periods,
 * kept with the arms (SHARD_CACHE_SECONDS at most, the time armSpans counts
 * a period as growing for).
 */
export async function projectArmSpans(env: Env, projectId: string): Promise<ArmSpan[]> {
  const arms = await projectArms(env, projectId);
  const place = (await projectPlace(env, projectId))!;
  if (place.spans === undefined || place.arms !== arms) {
    const spans = await armSpans(shardDb(env, place.shard), projectId, arms, Date.now(), SHARD_CACHE_SECONDS * 1000, periodLength(env));
    if (place.arms === arms) place.spans = spans;
    return spans;
  }
  return place.spans;
}

/** Forgets the arms this isolate knows of a project's shard: a read named a period that is gone. */
export function forgetArms(projectId: string): void {
  const place = placeOfProject.get(projectId);
  if (place !== undefined) {
    delete place.arms;
    delete place.spans;
  }
}

/** `read` with what `known` says of the project's arms; once more, known again, when a period it named is gone. */
async function againWhenGone<K, T>(projectId: string, known: () => Promise<K>, read: (k: K) => Promise<T>): Promise<T> {
  try {
    return await read(await known());
  } catch (error) {
    if (!isGonePeriod(error)) throw error;
    forgetArms(projectId);
    return read(await known());
  }
}

/**
 * `read` with the project's arms and their spans; once more, read again, when
 * a period they named is gone. `db`: the shard as the read sees it. The spans
 * may take the main tables for settled (armSpans: no mark when they were
 * read), or a growing period for holding nothing below some instant (its
 * span and low mark then), which holds for a read whose own first batch
 * finds the marks as they were (own-writes.ts): when it finds the main
 * tables marked or a period's mark lower, a commit went there since, and
 * `read` runs again with the spans the marks say (markedSpans), which are
 * kept till they are read again (the daily cron takes a main tables' mark
 * away only from a project with no row left there: storage/period-upkeep.ts;
 * reading an arm meanwhile costs a read, never a row). A database that does
 * not see its own writes cannot tell: it reads the main tables and every
 * growing period whatever they hold.
 */
export function withProjectArmSpans<T>(env: Env, projectId: string, db: D1Database, read: (spans: ArmSpan[]) => Promise<T>): Promise<T> {
  return againWhenGone(projectId, () => projectArmSpans(env, projectId), async (spans) => {
    if (!marksMatter(spans)) return read(spans);
    const kept = (marked: ArmSpan[]) => {
      const place = placeOfProject.get(projectId);
      if (place?.spans === spans) place.spans = marked;
      return marked;
    };
    const known = marksSeenYet(db);
    if (known === null) return read(markedSpans(spans, null));
    if (known !== undefined) return read(kept(markedSpans(spans, known)));
    const answer = await read(spans);
    const marked = markedSpans(spans, (await marksSeen(db))!);
    return marked === spans ? answer : read(kept(marked));
  });
}

/** `read` with the project's arms; once more with the shard's list read again when a period it named is gone. */
export function withProjectArms<T>(env: Env, projectId: string, read: (arms: Arm[]) => Promise<T>): Promise<T> {
  return againWhenGone(projectId, () => projectArms(env, projectId), read);
}

/** `read` once in each of the project's arms (model/periods.ts, overArms), answers in arm order. */
export function inProjectArms<T>(env: Env, projectId: string, db: D1Database, read: (arm: D1Database, n: Arm) => Promise<T>): Promise<T[]> {
  return withProjectArms(env, projectId, (arms) => overArms(db, read, arms));
}

/** The event database of a project. Every read and write of events finds it here. */
export async function eventsDb(env: Env, projectId: string): Promise<D1Database> {
  const shard = await projectShard(env, projectId);
  if (shard === null) throw new Error(`Unknown project ${projectId}`);
  return shardDb(env, shard);
}

/**
 * The event database of a project for reading its events from outside its
 * ledger: it sees every append the ledger answered before the read began,
 * also while the ledger answers ahead of a lagging shard (own-writes.ts).
 */
export async function eventsReadDb(env: Env, projectId: string): Promise<D1Database> {
  return ownWritesDb(await eventsDb(env, projectId), projectId, () => env.LEDGER.get(env.LEDGER.idFromName(projectId)).indexed());
}
