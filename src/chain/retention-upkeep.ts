import { alarmNoLaterThan } from "../lib/alarm";

/**
 * Retention at any size: each ledger purges its own project in bounded steps,
 * the first ones when the daily cron wakes it (purgeNow), the rest from its
 * own alarm, one invocation after another, until nothing expired is left. The
 * cron makes one call per project instead of hundreds (a cron run passed
 * 10,000 subrequests once about 25 projects had a backlog), and no project's
 * backlog waits a day per 200,000 events any more. Each step holds the commit
 * lock for one batch, so ingest waits at most one batch.
 */

/** Purge steps per invocation: each is a batch of 500 rows (or a few archived segments), a few D1 queries. */
export const STEPS_PER_CALL = 20;
/** Where the next step starts, while a run is under way. */
const CURSOR_KEY = "retention-run";

export interface PurgeBatch {
  purged: number;
  done: boolean;
  lastSeq: number;
}

export type PurgeStep = (now: string, afterSeq: number) => Promise<PurgeBatch>;

/**
 * Up to STEPS_PER_CALL steps from where the last call stopped; an alarm at
 * once when more is left. `now` is the purge's clock (the cron's, or the
 * alarm's); the run keeps the one it started with, so its cutoff holds still.
 */
export async function purgeRun(storage: DurableObjectStorage, step: PurgeStep, now: string): Promise<{ purged: number; done: boolean }> {
  const run = storage.kv.get<{ afterSeq: number; now: string }>(CURSOR_KEY) ?? { afterSeq: 0, now };
  let purged = 0;
  for (let i = 0; i < STEPS_PER_CALL; i++) {
    const batch = await step(run.now, run.afterSeq);
    purged += batch.purged;
    if (batch.done) {
      storage.kv.delete(CURSOR_KEY);
      return { purged, done: true };
    }
    run.afterSeq = batch.lastSeq;
  }
  storage.kv.put(CURSOR_KEY, run);
  await alarmNoLaterThan(storage, Date.now());
  return { purged, done: false };
}

/** The alarm's part: carry on a run the cron (or an earlier alarm) left unfinished; nothing otherwise. */
export async function retentionAlarm(storage: DurableObjectStorage, step: PurgeStep): Promise<void> {
  if (storage.kv.get(CURSOR_KEY) === undefined) return;
  await purgeRun(storage, step, new Date().toISOString());
}
