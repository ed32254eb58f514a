/**
 * Per-project activity rollups: events per hour (of occurred_at, UTC) and
 * action, kept in the ledger Durable Object's own SQLite storage, so the
 * console's chart reads a few hundred small rows instead of scanning events.
 * They count what was committed: a later purge, erasure or archive does not
 * uncount it (the chart shows what the project recorded, not what is left).
 *
 * A commit's counts are not written at once (issue 38: each upsert is a billed
 * row, three per commit of one event): they wait in memory and are written
 * together, with the last seq they cover (activity_through), before anything
 * reads them, from the ledger's alarm, and once enough wait. A ledger stopped
 * with counts waiting counts those events again from D1 when it starts
 * (rollup-catch-up.ts): every event up to activity_through is counted once.
 */

export type Bucket = "hour" | "day";

const HOUR_MS = 3_600_000;
/** Longest range one answer covers, in buckets: a chart wider than this is unreadable anyway. */
export const MAX_BUCKETS = 2000;
/** Actions shown as their own series; the rest are summed into `other`. */
export const TOP_ACTIONS = 6;

export interface RollupRow {
  action: string;
  occurred_at: string;
}

export interface Activity {
  bucket: Bucket;
  from: string;
  to: string;
  /** Start of each bucket, ISO 8601. */
  starts: string[];
  /** The busiest actions of the range, busiest first, each with its count per bucket. */
  series: { action: string; total: number; counts: number[] }[];
  /** Every other action, per bucket. */
  other: number[];
  total: number;
}

/** One action of GET /v1/actions: how often it was recorded and the hours (of occurred_at) it was first and last seen in. */
export interface ActionSeen {
  action: string;
  count: number;
  /** Start of the first hour holding the action, ISO 8601. */
  first_seen: string;
  /** End of the last hour holding the action (its last millisecond), ISO 8601. */
  last_seen: string;
  /** The newest version of the action's catalog schema, null when it has none (filled in by the ledger). */
  schema_version?: number | null;
}

/** Actions per page of GET /v1/actions, at most. */
export const MAX_ACTIONS_PAGE = 200;

/** Counts waiting in memory are written once this many events, or this many (hour, action) keys, wait. */
export const DEFER_EVENTS = 5000;
const DEFER_KEYS = 2000;

type HourCounts = Map<string, { hour: number; action: string; n: number }>;

export class Rollups {
  /** Counts of committed events not written yet, and the seq of the last of them. */
  private waiting: HourCounts = new Map();
  private waitingEvents = 0;
  private waitingThrough: number | null = null;

  constructor(private readonly sql: SqlStorage) {
    sql.exec("CREATE TABLE IF NOT EXISTS activity_rollups (hour INTEGER NOT NULL, action TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (hour, action)) WITHOUT ROWID");
    // Every committed event up to seq is counted in the tables; none yet: a ledger older than the deferral (through its head).
    sql.exec("CREATE TABLE IF NOT EXISTS activity_through (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL)");
    // Per day too: a year by day reads ~365 x actions rows, not 24 times as many (test/bench/console.bench.mjs).
    const daily = sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'activity_rollups_daily'").toArray().length > 0;
    if (!daily) {
      sql.exec("CREATE TABLE activity_rollups_daily (day INTEGER NOT NULL, action TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (day, action)) WITHOUT ROWID");
      sql.exec("INSERT INTO activity_rollups_daily (day, action, n) SELECT hour / 24, action, SUM(n) FROM activity_rollups GROUP BY 1, 2");
    }
    // Per action too, for GET /v1/actions: one row per action read in name order, whatever the history
    // (from the day table it read ~365 rows an action: 41 ms at p95 for 500 actions; npm run bench catalog).
    const perAction = sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'activity_actions'").toArray().length > 0;
    if (!perAction) {
      sql.exec("CREATE TABLE activity_actions (action TEXT PRIMARY KEY, n INTEGER NOT NULL, first_hour INTEGER NOT NULL, last_hour INTEGER NOT NULL) WITHOUT ROWID");
      sql.exec("INSERT INTO activity_actions (action, n, first_hour, last_hour) SELECT action, SUM(n), MIN(hour), MAX(hour) FROM activity_rollups GROUP BY action");
    }
  }

  /** Empties the counts (a rebuild starts: rollup-backfill.ts). */
  clear(): void {
    this.flush();
    this.sql.exec("DELETE FROM activity_rollups");
    this.sql.exec("DELETE FROM activity_rollups_daily");
    this.sql.exec("DELETE FROM activity_actions");
  }

  /** Writes these rows' counts now (a rebuild's step, a catch-up), in the caller's storage transaction. */
  add(rows: readonly RollupRow[]): void {
    this.write(countByHour(rows, new Map()));
  }

  /** A commit's rows, in seq order: counted in memory, written by the next flush(). */
  defer(rows: ReadonlyArray<RollupRow & { seq: number }>): void {
    if (rows.length === 0) return;
    countByHour(rows, this.waiting);
    this.waitingEvents += rows.length;
    this.waitingThrough = rows[rows.length - 1].seq;
    if (this.waitingEvents >= DEFER_EVENTS || this.waiting.size >= DEFER_KEYS) this.flush();
  }

  /** Writes the waiting counts and the seq they reach, in one storage transaction (no await in between). */
  flush(): void {
    if (this.waitingThrough === null) return;
    this.write(this.waiting);
    this.setThrough(this.waitingThrough);
    this.waiting = new Map();
    this.waitingEvents = 0;
    this.waitingThrough = null;
  }

  /** Every committed event up to this seq is counted in the tables; null for a ledger from before the deferral. */
  through(): number | null {
    return this.sql.exec<{ seq: number }>("SELECT seq FROM activity_through WHERE id = 1").toArray()[0]?.seq ?? null;
  }

  setThrough(seq: number): void {
    this.sql.exec("INSERT INTO activity_through (id, seq) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET seq = excluded.seq", seq);
  }

  private write(counts: HourCounts): void {
    // Each of the three tables gets one upsert per key it has in these counts: a row written is billed,
    // and a backfill spreads one commit's events over as many hours as it has events.
    const days = new Map<string, { day: number; action: string; n: number }>();
    const actions = new Map<string, { n: number; first: number; last: number }>();
    for (const { hour, action, n } of counts.values()) {
      this.sql.exec("INSERT INTO activity_rollups (hour, action, n) VALUES (?, ?, ?) ON CONFLICT (hour, action) DO UPDATE SET n = n + excluded.n", hour, action, n);
      const day = Math.floor(hour / 24);
      const key = `${day}\u0000${action}`;
      const seen = days.get(key);
      if (seen) seen.n += n;
      else days.set(key, { day, action, n });
      const known = actions.get(action);
      if (known) [known.n, known.first, known.last] = [known.n + n, Math.min(known.first, hour), Math.max(known.last, hour)];
      else actions.set(action, { n, first: hour, last: hour });
    }
    for (const { day, action, n } of days.values()) {
      this.sql.exec("INSERT INTO activity_rollups_daily (day, action, n) VALUES (?, ?, ?) ON CONFLICT (day, action) DO UPDATE SET n = n + excluded.n", day, action, n);
    }
    for (const [action, { n, first, last }] of actions) {
      this.sql.exec(
        "INSERT INTO activity_actions (action, n, first_hour, last_hour) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (action) DO UPDATE SET " +
          "n = n + excluded.n, first_hour = MIN(first_hour, excluded.first_hour), last_hour = MAX(last_hour, excluded.last_hour)",
        action, n, first, last,
      );
    }
  }

  /**
   * Events per hour (of occurred_at, hours since the epoch) of the actions
   * these patterns name (exact, or a prefix ending in `*`), for anomaly rules
   * (src/alerts/anomaly.ts): one indexed read per hour asked for.
   */
  hourCounts(patterns: string[], hours: number[]): Record<number, number> {
    this.flush();
    const exact = patterns.filter((p) => !p.endsWith("*"));
    const prefixes = patterns.filter((p) => p.endsWith("*")).map((p) => p.slice(0, -1));
    const out: Record<number, number> = {};
    for (const hour of hours) {
      const rows = this.sql.exec<{ action: string; n: number }>("SELECT action, n FROM activity_rollups WHERE hour = ?", hour).toArray();
      out[hour] = rows.filter((r) => exact.includes(r.action) || prefixes.some((p) => r.action.startsWith(p))).reduce((sum, r) => sum + r.n, 0);
    }
    return out;
  }

  /**
   * The actions recorded, in name order after `after`, those starting with
   * `prefix` only: one row per action (activity_actions, kept with the hourly
   * rollups at commit time), read in key order from the later of the prefix
   * and the cursor, so a page costs its own rows whatever the history.
   */
  actions(prefix: string, after: string | null, limit: number): ActionSeen[] {
    this.flush();
    const from = after !== null && after >= prefix ? after : prefix;
    const rows = this.sql
      .exec<{ action: string; n: number; first_hour: number; last_hour: number }>(
        `SELECT action, n, first_hour, last_hour FROM activity_actions WHERE action ${from === after ? ">" : ">="} ?1 AND substr(action, 1, length(?2)) = ?2 ORDER BY action LIMIT ?3`,
        from, prefix, Math.min(limit, MAX_ACTIONS_PAGE + 1),
      )
      .toArray();
    return rows.map(({ action, n, first_hour, last_hour }) => ({
      action,
      count: n,
      first_seen: new Date(first_hour * HOUR_MS).toISOString(),
      last_seen: new Date((last_hour + 1) * HOUR_MS - 1).toISOString(),
    }));
  }

  /** Counts per bucket in [from, to] (both ISO 8601, whole buckets), the top actions apart. */
  read(from: string, to: string, bucket: Bucket): Activity {
    this.flush();
    const size = bucket === "hour" ? 1 : 24;
    const first = alignHour(Date.parse(from), size);
    const last = alignHour(Date.parse(to), size);
    const n = Math.floor((last - first) / size) + 1;
    const end = first + n * size - 1;
    // Bucket b of the answer is unit lo + b of its table: hours, or days (first is a whole day then).
    const [table, unit, lo, hi] = bucket === "hour" ? ["activity_rollups", "hour", first, end] : ["activity_rollups_daily", "day", first / 24, (end + 1) / 24 - 1];
    const top = this.sql
      .exec<{ action: string; total: number }>(
        `SELECT action, SUM(n) AS total FROM ${table} WHERE ${unit} >= ? AND ${unit} <= ? GROUP BY action ORDER BY total DESC, action LIMIT ?`,
        lo, hi, TOP_ACTIONS,
      )
      .toArray();
    const index = new Map(top.map((t, i) => [t.action, i]));
    const series = top.map((t) => ({ action: t.action, total: t.total, counts: new Array<number>(n).fill(0) }));
    const other = new Array<number>(n).fill(0);
    let total = 0;
    // Offsets from the first hour are never negative, so integer division is a floor; every
    // action outside the top ones folds into one NULL group, so the rows stay buckets x (top + 1).
    const named = top.length === 0 ? "NULL" : `CASE WHEN action IN (${top.map(() => "?").join(",")}) THEN action END`;
    const cells = this.sql.exec<{ b: number; action: string | null; c: number }>(
      // Numbers are bound as REAL: cast, so b is an integer.
      `SELECT ${unit} - CAST(? AS INTEGER) AS b, ${named} AS action, SUM(n) AS c FROM ${table} WHERE ${unit} >= ? AND ${unit} <= ? GROUP BY 1, 2`,
      lo, ...top.map((t) => t.action), lo, hi,
    );
    for (const { b, action, c } of cells) {
      total += c;
      const i = action === null ? undefined : index.get(action);
      if (i === undefined) other[b] += c;
      else series[i].counts[b] += c;
    }
    const starts = Array.from({ length: n }, (_, i) => new Date((first + i * size) * HOUR_MS).toISOString());
    return { bucket, from: starts[0], to: new Date((end + 1) * HOUR_MS - 1).toISOString(), starts, series, other, total };
  }
}

/** Adds the rows' events per (hour of occurred_at, action) to `counts`. */
function countByHour(rows: readonly RollupRow[], counts: HourCounts): HourCounts {
  for (const row of rows) {
    const ms = Date.parse(row.occurred_at);
    if (!Number.isFinite(ms)) continue;
    const hour = Math.floor(ms / HOUR_MS);
    const key = `${hour}\u0000${row.action}`;
    const seen = counts.get(key);
    if (seen) seen.n++;
    else counts.set(key, { hour, action: row.action, n: 1 });
  }
  return counts;
}

/** The hour number of the bucket holding `ms`. */
function alignHour(ms: number, size: number): number {
  const hour = Math.floor(ms / HOUR_MS);
  return Math.floor(hour / size) * size;
}

/** How many buckets [from, to] spans (the schema refuses more than MAX_BUCKETS). */
export function bucketCount(from: string, to: string, bucket: Bucket): number {
  const size = bucket === "hour" ? 1 : 24;
  return Math.floor((alignHour(Date.parse(to), size) - alignHour(Date.parse(from), size)) / size) + 1;
}
