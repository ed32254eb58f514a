import { alarmNoLaterThan } from "../lib/alarm";
import { LimitExceededError } from "../lib/meter";
import { hotDays, PARTIAL_AFTER_MS, SEGMENT_ROWS, type ArchiveMode } from "./archive-run";
import { relievePressure, WARN_FRACTION, warnIfFull } from "./shard-pressure";
import { projectShard } from "./shards";
import type { LedgerHost } from "./ledger-host";
import { rowsBySeq } from "../model/row-keys";

/**
 * Continuous archiving, from each project's ledger alarm (the daily cron only
 * checks and sweeps: archive-check.ts). An alarm seals what its hot window
 * lets go, in bounded steps (MAX_ALARM_STEPS segments, then a fresh alarm at
 * once if more is due: each alarm is its own invocation, with its own D1 and
 * subrequest budget), then measures the shard and, over its high-water mark,
 * archives from the shard's largest projects (shard-pressure.ts). Commits keep
 * the alarm no later than CHECK_MS after the last measure, and at once while
 * the shard is over its mark; an idle ledger only wakes when its next whole
 * segment (or a day-old part of one) is due.
 */

/** Segments per alarm: ~7 D1 queries and 3 R2 writes each, far under 1,000 queries / 10,000 subrequests. */
export const MAX_ALARM_STEPS = 25;
/** Pressure segments per alarm, from this or other projects of the shard. */
export const MAX_PRESSURE_STEPS = 10;
/** While a ledger commits, its shard is measured at least this often. */
export const CHECK_MS = 60_000;

const KEY = "archive_upkeep";

interface UpkeepState {
  /** When this ledger last measured its shard (0: never). */
  checkedAt: number;
  /** When the window next lets a segment go; null: nothing will without new events. */
  nextDueAt: number | null;
  /** The daily check asked for a tidy pass (partial segments, backfill, sweep). */
  tidy: boolean;
  /** The shard as last measured. */
  size: number | null;
  mark: number | null;
}

/** The ledger the archive's alarm runs in (./ledger-host.ts), and its one archive step under the commit lock. */
export type UpkeepHost = LedgerHost & {
  step: (now: string, mode: ArchiveMode) => Promise<{ archived: number; done: boolean }>;
};

function load(storage: DurableObjectStorage): UpkeepState {
  return storage.kv.get<UpkeepState>(KEY) ?? { checkedAt: 0, nextDueAt: null, tidy: false, size: null, mark: null };
}


/** After each commit: the next measure within CHECK_MS, at once while the shard is over its mark. */
export async function afterCommit(storage: DurableObjectStorage, now = Date.now()): Promise<void> {
  const s = load(storage);
  const over = s.size !== null && s.mark !== null && s.size > s.mark;
  let at = over ? now : s.checkedAt === 0 ? now + CHECK_MS : s.checkedAt + CHECK_MS;
  if (s.nextDueAt !== null) at = Math.min(at, s.nextDueAt);
  await alarmNoLaterThan(storage, Math.max(at, now));
}

/** The daily check's request: a tidy pass at the next alarm, which is now. */
export async function requestTidy(storage: DurableObjectStorage): Promise<void> {
  storage.kv.put(KEY, { ...load(storage), tidy: true });
  await alarmNoLaterThan(storage, Date.now());
}

/** When the window next lets go of a whole segment, or of the oldest row a day after it was due. */
async function nextDue(host: UpkeepHost): Promise<number | null> {
  const days = await hotDays(host.env, host.projectId);
  if (days === null) return null;
  const row = await host
    .db()
    .prepare(
      `SELECT (SELECT received_at FROM ${rowsBySeq({ project: "?1", lo: "0", hi: null, limit: "1", columns: "e.received_at" })}) AS oldest, ` +
        `(SELECT received_at FROM ${rowsBySeq({ project: "?1", lo: "0", hi: null, limit: "?2 + 1", columns: "e.received_at" })} LIMIT 1 OFFSET ?2) AS whole`,
    )
    .bind(host.projectId, SEGMENT_ROWS - 1)
    .first<{ oldest: string | null; whole: string | null }>();
  const due = (at: string | null | undefined, extra: number) => (at ? Date.parse(at) + days * 86_400_000 + extra : Infinity);
  const at = Math.min(due(row?.whole, 0), due(row?.oldest, PARTIAL_AFTER_MS));
  return Number.isFinite(at) ? at : null;
}

/** The alarm's archive work; never throws (a failed step lost nothing: archive-run.ts), it retries a minute later. */
export async function archiveAlarm(host: UpkeepHost): Promise<void> {
  const { env, projectId, storage } = host;
  const s = load(storage);
  const now = Date.now();
  const iso = new Date(now).toISOString();
  let more = false;
  let retryAt: number | null = null;
  try {
    if (s.tidy || s.nextDueAt === null || s.nextDueAt <= now) {
      let step = { archived: 0, done: true };
      for (let i = 0; i < MAX_ALARM_STEPS; i++) if ((step = await host.step(iso, s.tidy ? "tidy" : "routine")).done) break;
      more = !step.done;
      if (step.done) s.tidy = false;
    }
    const shard = await projectShard(env, projectId);
    if (shard !== null) {
      const wasWarned = s.size !== null && s.mark !== null && s.size >= s.mark * WARN_FRACTION;
      const pressure = await relievePressure(env, shard, (id) => pressureStep(host, id, iso), MAX_PRESSURE_STEPS);
      // One log line when a shard crosses into the warning band, not one per check; one each time it passes the mark.
      if (!wasWarned || pressure.before > pressure.mark) warnIfFull({ ...pressure, size: pressure.before }, `measured by the ledger of ${projectId}`);
      Object.assign(s, { size: pressure.size, mark: pressure.mark, checkedAt: now });
      more ||= pressure.size > pressure.mark && pressure.progressed;
    }
    s.nextDueAt = more ? now : await nextDue(host);
    // Due already yet nothing went (a move or the log's build holds history): not a busy loop.
    if (!more && s.nextDueAt !== null && s.nextDueAt <= now) s.nextDueAt = now + CHECK_MS;
  } catch (error) {
    // Past a platform limit is a bug to see, not a hiccup to retry (only the tests' meter throws it).
    if (error instanceof LimitExceededError) throw error;
    console.error(`ledger ${projectId}: archiving failed; retried in a minute (nothing was lost)`, error);
    retryAt = now + CHECK_MS;
  }
  storage.kv.put(KEY, s);
  const at = retryAt ?? s.nextDueAt;
  if (at !== null) await alarmNoLaterThan(storage, at);
}

/** This project's own segment under its lock, or another project's through its ledger. */
async function pressureStep(host: UpkeepHost, projectId: string, now: string): Promise<number> {
  if (projectId === host.projectId) return (await host.step(now, "pressure")).archived;
  const ledger = host.env.LEDGER.get(host.env.LEDGER.idFromName(projectId));
  return (await ledger.archiveSegment(now, { mode: "pressure" })).archived;
}
