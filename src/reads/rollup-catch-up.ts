import { rollupPage } from "./rollup-backfill";
import { DEFER_EVENTS, type Rollups } from "./rollups";

/** Events one catch-up query reads: the most a ledger leaves waiting fits in one. */
const PAGE_ROWS = DEFER_EVENTS;

/**
 * At a ledger's start (and when it reloads its head after a failed commit),
 * with the head loaded: counts the committed events past the rollups'
 * activity_through (rollups.ts) from D1, a page at a time, each page's counts
 * and its new through in one storage transaction. These are the events of a
 * previous instance that was stopped with their counts still in memory, and a
 * commit adopted at start (chain/head-recovery.ts). A ledger from before the
 * deferral wrote every commit's counts at once, so everything up to the head
 * it had stored is counted.
 */
export async function catchUpRollups(db: D1Database, projectId: string, rollups: Rollups, storedHeadSeq: number, headSeq: number): Promise<void> {
  // Waiting counts first: what they cover is counted once, by them.
  rollups.flush();
  const counted = rollups.through();
  if (counted === null) rollups.setThrough(storedHeadSeq);
  let through: number = counted ?? storedHeadSeq;
  while (through < headSeq) {
    const page = await rollupPage(db, projectId, through, headSeq, PAGE_ROWS);
    through = page.through;
    rollups.add(page.rows);
    rollups.setThrough(through);
  }
}
