/**
 * Rollups (rollups.ts) are kept at commit time, so a ledger older than them
 * charts nothing before they shipped. Once per ledger, its rollups are rebuilt
 * from the hot events it already holds: at start-up (before any commit) the
 * table is emptied and the head's seq recorded as the target; commits after
 * that count their own events as always, and the alarm counts the events up
 * to the target in steps of one D1 page each, under the commit lock, the
 * cursor moving in the same storage transaction as the counts it covers, so a
 * step cut short is done again whole, never twice. Events already purged or
 * archived are not counted (they are not in the hot rows the steps read).
 */
import { alarmNoLaterThan } from "../lib/alarm";
import type { Rollups, RollupRow } from "./rollups";
import type { LedgerHost } from "../storage/ledger-host";
import { rowsBySeq } from "../model/row-keys";
import { mergeBySeq, overArms } from "../model/periods";

interface BackfillState {
  /** Every event with seq <= through is counted. */
  through: number;
  /** The head when the rebuild began; later events were counted by their commits. */
  target: number;
}

const KEY = "rollups_backfill";

/** Rows one step reads (one D1 query) and how long one alarm keeps stepping; tests shrink them. */
export const backfillPolicy = { pageRows: 5000, runBudgetMs: 2000 };

const pending = (s: BackfillState | undefined): s is BackfillState => s !== undefined && s.through < s.target;

/**
 * At the ledger's start, with the head loaded and before any commit: a ledger
 * never rebuilt starts its rebuild (a new one, at seq 0, has nothing to count);
 * while one is under way, an alarm is due now.
 */
export async function beginRollupBackfill(storage: DurableObjectStorage, rollups: Rollups, headSeq: number): Promise<void> {
  if (storage.kv.get<BackfillState>(KEY) === undefined) {
    rollups.clear();
    storage.kv.put(KEY, { through: 0, target: headSeq } satisfies BackfillState);
  }
  if (pending(storage.kv.get<BackfillState>(KEY))) await alarmNoLaterThan(storage, Date.now());
}


/** The ledger the backfill runs in (src/storage/ledger-host.ts), and the rollups it fills. */
export type BackfillHost = LedgerHost & {
  rollups: Rollups;
};

/** From the ledger's alarm: steps until done or out of budget, then asks for another alarm if work is left. */
export async function rollupBackfillAlarm(host: BackfillHost): Promise<void> {
  const started = Date.now();
  while (pending(host.storage.kv.get<BackfillState>(KEY)) && Date.now() - started < backfillPolicy.runBudgetMs) {
    await host.exclusive(() => step(host));
  }
  // Commits waiting on the lock go first.
  if (pending(host.storage.kv.get<BackfillState>(KEY))) await alarmNoLaterThan(host.storage, Date.now() + 50);
}

/**
 * The project's hot events with seq in (after, upTo], up to `pageRows` of
 * them, as the rollups count them, and the seq they are counted through: upTo
 * on the last page. Events purged or archived meanwhile are not there to count.
 * Read in each of the shard's arms (model/periods.ts), listed at each page (a
 * page is thousands of rows), and merged.
 */
export async function rollupPage(db: D1Database, projectId: string, after: number, upTo: number, pageRows: number): Promise<{ rows: RollupRow[]; through: number }> {
  const sql = `SELECT seq, action, occurred_at FROM ${rowsBySeq({ project: "?1", lo: "?2 + 1", hi: "?3", limit: "?4", columns: "e.seq, e.action, e.occurred_at" })}`;
  const lists = await overArms(db, async (arm) => (await arm.prepare(sql).bind(projectId, after, upTo, pageRows).all<RollupRow & { seq: number }>()).results);
  // Each arm's first pageRows rows: the first pageRows of them all are in order, and no row of any arm is missing below the last.
  const results = mergeBySeq(lists, pageRows);
  return { rows: results, through: results.length < pageRows ? upTo : results[results.length - 1].seq };
}

async function step(host: BackfillHost): Promise<void> {
  const state = host.storage.kv.get<BackfillState>(KEY);
  if (!pending(state)) return;
  const { rows, through } = await rollupPage(host.db(), host.projectId, state.through, state.target, backfillPolicy.pageRows);
  // No await from here on: the counts and the cursor land in one storage transaction.
  host.rollups.add(rows);
  host.storage.kv.put(KEY, { through, target: state.target } satisfies BackfillState);
}

/** Where the rebuild stands (null: never begun), for tests and the operator. */
export function rollupBackfillState(storage: DurableObjectStorage): BackfillState | null {
  return storage.kv.get<BackfillState>(KEY) ?? null;
}
