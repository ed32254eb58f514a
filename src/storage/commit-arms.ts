/**
 * Which arm a project's commits are written to (model/periods.ts): the
 * period of the commit's instant, when the shard has made it and the project
 * may live in periods; else the main tables.
 *
 * A project may when its rows are keyed (row ids made from its number: a
 * period's rows need no numbering of the shard's own) and it archives within
 * the default window: a period is dropped once the archive has sealed all it
 * holds, which waits for the longest window among its projects, so a project
 * kept hot longer (or for ever: no window) would keep everyone's rows in D1
 * with it. Those stay in the main tables, whose rows the archive deletes.
 *
 * The ledger asks synchronously, at each commit, from what it read last; it
 * reads once at its start, before its first commit, and again in the
 * background once a minute, never in a commit's way. When a read fails,
 * commits go to the main tables, which is always sound: each marks them for
 * the project's reads (model/periods.ts, MAIN_COMMIT_SQL).
 */
import { commitArm, periodLength, shardPeriods, type Arm, type ShardPeriod } from "../model/periods";
import { hotDaysSetting } from "./project-row";
import type { LedgerHost } from "./ledger-host";

/** How long the ledger trusts what it read of its shard's periods and its own window. */
const REFRESH_MS = 60_000;

interface Known {
  db: D1Database;
  at: number;
  periods: ShardPeriod[];
}

export class CommitArms {
  private known: Known | null = null;
  private reading: Promise<void> | null = null;

  constructor(private readonly host: Pick<LedgerHost, "env" | "projectId" | "db">) {}

  /** The arm of a commit received at `ms` (null: the main tables). */
  arm(ms: number): Arm {
    const db = this.host.db();
    const known = this.known;
    if (known === null || known.db !== db || Date.now() - known.at > REFRESH_MS) this.refresh();
    // What was read of another shard (before a move) says nothing of this one.
    return known === null || known.db !== db ? null : commitArm(known.periods, ms, periodLength(this.host.env));
  }

  /** Reads the shard's periods and the project's place in them again, once at a time; never throws. */
  refresh(): Promise<void> {
    this.reading ??= this.read()
      .catch((error) => console.error(`ledger ${this.host.projectId}: the shard's periods could not be read; commits go to the main tables`, error))
      .finally(() => (this.reading = null));
    return this.reading;
  }

  private async read(): Promise<void> {
    const db = this.host.db();
    // Statements of their own, not a batch: a commit's D1 batch is the one batch a ledger sends (the tests that stop
    // a ledger mid-commit take its next batch for the commit's).
    const periods = await shardPeriods(db);
    const keyed = periods.length > 0 ? await db.prepare("SELECT 1 AS keyed FROM project_keys WHERE project_id = ?").bind(this.host.projectId).first() : null;
    let eligible = periods.length > 0 && keyed !== null;
    if (eligible) {
      const row = await this.host.env.DB.prepare("SELECT hot_days FROM projects WHERE id = ?").bind(this.host.projectId).first<{ hot_days: number | null }>();
      eligible = row !== null && row.hot_days !== null && row.hot_days <= periodWindowDays(this.host.env);
    }
    this.known = { db, at: Date.now(), periods: eligible ? periods : [] };
  }
}

/**
 * The window a period waits out after its last day before the archive seals
 * it: the deployment's default (DEFAULT_HOT_DAYS; 30 when tiering is off by
 * default, where only projects given a window use periods).
 */
export function periodWindowDays(env: Env): number {
  return hotDaysSetting(env.DEFAULT_HOT_DAYS).days ?? 30;
}

