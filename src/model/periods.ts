// .ts extensions: test/migrations/storage-v2.test.mjs runs this file in plain Node.
import { decodeCursor, encodeCursor, type Cursor } from "./cursor.ts";
import { MAX_FUTURE_SKEW_MS } from "./new-event.ts";

/**
 * Periods: a shard's hot events in tables of their own per period of arrival
 * (issue 38, storage v2; the bench README's "Periods, the route under 4 rows"
 * has the plan and its measurements).
 *
 * D1 bills a row written at every insert and at every delete, and nothing for
 * a dropped table, whatever it held (`npm run bench -- billing`). Archiving a
 * row by deleting it is a billed row an event, a fifth of an event's life.
 * A period is a full copy of the tables an event's rows live in (the events
 * table and the rows that stand in for index entries, the search index among
 * them), each named with the period's suffix: `events_p2950` beside `events`.
 * Once every row a period holds is archived, its tables are dropped, free.
 *
 * Every statement over a project's hot rows is written once, against the
 * main tables, and read from each period by the same text with the period's
 * names (inPeriod): a period is self-consistent, as if the project's history
 * began and ended inside it, so each statement's plan is the one it has over
 * the main tables, its INDEXED BY included. The periods of one read are its
 * arms: the main tables first, then each period the shard holds (readArms).
 * Writers put a commit's rows, spans, sets and search entries in one arm.
 *
 * The period set below is held to the schema by test/model/periods.test.ts:
 * a migration that adds a table, index or trigger of an event's rows names it
 * here, and one that changes them must change each period the same way (a
 * period is made from the main tables' schema as it is when it is made).
 */

/** The tables an event's rows live in, and their indexes and triggers: what a period copies, under its suffix. */
export const PERIOD_TABLES = [
  "events",
  "events_search",
  "event_targets",
  "commit_spans",
  "ip_runs",
  "target_type_sets",
  "action_sets",
  "organization_sets",
  "address_sets",
] as const;

/** Every index and trigger of PERIOD_TABLES (FTS5 makes the search index's own tables itself). */
export const PERIOD_OBJECTS = [
  "events_legacy_id_unique",
  "events_actor_time_idx",
  "events_first_target_id_idx",
  "events_second_target_id_idx",
  "events_ip_time_idx",
  "events_first_target_type_idx",
  "events_second_target_type_idx",
  "events_project_time_idx",
  "events_action_time_idx",
  "events_org_time_idx",
  "events_project_seq_idx",
  "event_targets_type_time_idx",
  "commit_spans_live_time_idx",
  "event_targets_after_delete",
  "events_search_after_delete",
  "events_search_after_update",
  "event_targets_after_insert",
  "events_given_up",
  "commit_spans_after_delete",
  "keyed_commit_spans_after_delete",
  "ip_runs_after_delete",
  "keyed_ip_runs_after_delete",
  "ip_runs_after_scrub",
  "keyed_ip_runs_after_scrub",
  "target_type_sets_after_delete",
  "keyed_target_type_sets_after_delete",
  "action_sets_after_delete",
  "keyed_action_sets_after_delete",
  "organization_sets_after_delete",
  "keyed_organization_sets_after_delete",
  "address_sets_after_delete",
  "keyed_address_sets_after_delete",
  "address_sets_after_scrub",
  "keyed_address_sets_after_scrub",
  "commit_spans_given_up",
] as const;

/** A period's number: whole periods since the Unix epoch. Null is the main tables. */
export type Arm = number | null;

/** How long a period is: a week, so that with 30 days hot some five or six hold a shard's hot rows. */
export const PERIOD_MS = 7 * 24 * 3600 * 1000;

/** A period as its shard lists it (`periods`, migration 0048). */
export interface ShardPeriod {
  n: number;
  made_at: string;
  /** Since when the archive seals its rows whatever their windows (null: not yet), so that it can be dropped. */
  sealing_at: string | null;
}

/**
 * How long before a commit writes to a period the shard must have made it:
 * past any list of arms a reader cached (storage/shards.ts keeps one for
 * SHARD_CACHE_SECONDS, 30), twice over, so no reader's list lacks a period
 * its rows are in.
 */
export const ARM_LEAD_MS = 60_000;

/** The arm of a commit received at `ms`: the period of that instant when the shard made it ARM_LEAD_MS before and is not sealing it; else the main tables. */
export function commitArm(periods: readonly ShardPeriod[], ms: number, length = PERIOD_MS): Arm {
  const n = periodOf(ms, length);
  const period = periods.find((p) => p.n === n);
  return period !== undefined && period.sealing_at === null && Date.parse(period.made_at) <= ms - ARM_LEAD_MS ? n : null;
}

/** A period's length in ms (PERIOD_SECONDS; a week when unset or unreadable): the ledgers', the cron's and the readers', the same. */
export function periodLength(env: Env): number {
  const seconds = Number(env.PERIOD_SECONDS);
  return Number.isSafeInteger(seconds) && seconds >= 60 ? seconds * 1000 : PERIOD_MS;
}

/** The period an instant falls in. */
export function periodOf(ms: number, length = PERIOD_MS): number {
  return Math.floor(ms / length);
}

const NAMES = new RegExp(`([\`"]?)\\b(${[...PERIOD_TABLES, ...PERIOD_OBJECTS].join("|")})\\b\\1`, "g");

/** A table's, index's or trigger's name in arm `arm`. */
export function armName(name: string, arm: Arm): string {
  return arm === null ? name : `${name}_p${arm}`;
}

/**
 * SQL written against the main tables, for arm `arm`: every name of the
 * period set (tables, their indexes and triggers, quoted or not) with the
 * period's suffix. Column names never coincide with them; parameters and the
 * other tables (projects, project_keys, given-up appends) are left as they are.
 */
export function inPeriod(sql: string, arm: Arm): string {
  if (arm === null) return sql;
  return RENAMED.of(`${arm}`, sql, () =>
    sql
      .replace(NAMES, (_, quote: string, name: string) => `${quote}${name}_p${arm}${quote}`)
      .replace(FTS_OWN, (_, quote: string, part: string) => `${quote}events_search_p${arm}_${part}${quote}`),
  );
}

/**
 * What a pure function of a statement's text gave, kept for the isolate's
 * life: statements are fixed texts (their values are bound apart), a few
 * hundred of them, so each is renamed for an arm or compounded once, not on
 * every read. Done on every read, that string work cost a list at 1M events
 * over periods about 1 ms of the isolate's time a request
 * (test/bench/README.md, "The compound's text made once"). A text made of
 * values would fill it: past `most` texts of one kind it starts again.
 */
class TextMemo<T> {
  private readonly kinds = new Map<string, Map<string, T>>();
  private readonly most: number;
  constructor(most: number) {
    this.most = most;
  }
  of(kind: string, text: string, make: () => T): T {
    let texts = this.kinds.get(kind);
    if (texts === undefined) this.kinds.set(kind, (texts = new Map()));
    let made = texts.get(text);
    if (made === undefined) {
      if (texts.size >= this.most) texts.clear();
      texts.set(text, (made = make()));
    }
    return made;
  }
}
const RENAMED = new TextMemo<string>(2_000);

/** FTS5's own tables of the search index, which statements name too (search-index.ts reads events_search_docsize): FTS5 names a period's after its virtual table, `events_search_p2950_docsize`. */
const FTS_OWN = /([`"]?)\bevents_search_(data|idx|docsize|config|content)\b\1/g;

/** The statements that make period `arm`'s tables, indexes and triggers from the main tables' schema (`sqlite_master` rows). */
export function periodDdl(schema: readonly { type: string; name: string; sql: string | null }[], arm: number): string[] {
  const wanted = new Set<string>([...PERIOD_TABLES, ...PERIOD_OBJECTS]);
  const order = ["table", "index", "trigger"];
  return schema
    .filter((o) => o.sql !== null && wanted.has(o.name))
    .sort((a, b) => order.indexOf(a.type) - order.indexOf(b.type))
    .map((o) => inPeriod(o.sql!, arm));
}

/** SQL: the main tables' schema rows that periodDdl copies. */
export const PERIOD_SCHEMA_SQL = `SELECT type, name, sql FROM sqlite_master WHERE tbl_name IN (${PERIOD_TABLES.map((t) => `'${t}'`).join(", ")})`;

/** The shard's database as arm `arm` sees it: every statement prepared through it names that arm's tables (inPeriod). */
export function armDb(db: D1Database, arm: Arm): D1Database {
  if (arm === null) return db;
  const wrapped = {
    prepare: (sql: string) => db.prepare(inPeriod(sql, arm)),
    batch: <T>(statements: D1PreparedStatement[]) => db.batch<T>(statements),
    exec: (sql: string) => db.exec(inPeriod(sql, arm)),
    withSession: () => {
      throw new Error("armDb: sessions are not used on event shards");
    },
    dump: () => db.dump(),
  };
  return wrapped as unknown as D1Database;
}

/**
 * Makes period `arm`'s tables in the shard, copied from the main tables'
 * schema as it is now, and names it in `periods`: one batch, so all or none.
 * Two crons may make the same period at once (the minute's and the day's at
 * 03:17): the second batch fails whole, and that is fine once the period is
 * listed, so it returns false then rather than fail its caller.
 */
export async function makePeriod(db: D1Database, arm: number, now = new Date()): Promise<boolean> {
  const { results } = await db.prepare(PERIOD_SCHEMA_SQL).all<{ type: string; name: string; sql: string | null }>();
  try {
    await db.batch([
      ...periodDdl(results, arm).map((sql) => db.prepare(sql)),
      db.prepare("INSERT INTO periods (n, made_at) VALUES (?, ?)").bind(arm, now.toISOString()),
    ]);
    return true;
  } catch (error) {
    if ((await shardPeriods(db)).some((p) => p.n === arm)) return false;
    throw error;
  }
}

/**
 * Drops period `arm`'s tables with their indexes and triggers, whatever they
 * hold, its low marks and its name in `periods`, in one batch. Returns the
 * rows D1 billed: the name's and one a project that committed there (its
 * mark), however many rows the tables held (a dropped table bills none:
 * test/model/periods.test.ts).
 */
export async function dropPeriod(db: D1Database, arm: number): Promise<number> {
  const results = await db.batch(dropPeriodSql(arm).map((q) => db.prepare(q)));
  return results.reduce((sum, r) => sum + (r.meta.rows_written ?? 0), 0);
}

/** SQL: period `arm`'s tables dropped and its row deleted, in order (dropPeriod; the benches run it on a shard's file). */
export function dropPeriodSql(arm: number): string[] {
  // Triggers and indexes go with their tables; FTS5's own tables with its virtual table.
  const n = Math.trunc(arm);
  return [...PERIOD_TABLES.map((t) => `DROP TABLE IF EXISTS ${armName(t, arm)}`), `DELETE FROM period_lows WHERE period = ${n}`, `DELETE FROM periods WHERE n = ${n}`];
}

/** SQL: the shard's periods, oldest first: with the main tables (null, first), the arms of a read. */
export const PERIODS_SQL = "SELECT n FROM periods ORDER BY n";

/** The shard's periods as it lists them (`periods`), oldest first. */
export async function shardPeriods(db: D1Database): Promise<ShardPeriod[]> {
  return (await db.prepare("SELECT n, made_at, sealing_at FROM periods ORDER BY n").all<ShardPeriod>()).results;
}

/** The shard's arms, read now: the main tables (null), then each period it holds, oldest first. */
export async function shardArms(db: D1Database): Promise<Arm[]> {
  return [null, ...(await shardPeriods(db)).map((p) => p.n)];
}

/** `read` with the shard's arms as listed now; once more, listed again, should a period it names be gone meanwhile (a batch fails whole). */
export async function withShardArms<T>(db: D1Database, read: (arms: Arm[]) => Promise<T>): Promise<T> {
  try {
    return await read(await shardArms(db));
  } catch (error) {
    if (!isGonePeriod(error)) throw error;
    return read(await shardArms(db));
  }
}

/** D1's refusal of a statement that names a table not there: a period dropped since its arms were listed. */
export function isGonePeriod(error: unknown): boolean {
  return error instanceof Error && /no such table/i.test(error.message);
}

/**
 * `read` once in each arm (through armDb), all at once, their answers in arm
 * order. `arms`: the shard's arms as the caller knows them (a list it keeps,
 * which it reads again itself when D1 says a period is gone: isGonePeriod),
 * or none to list them now, and again should a period go meanwhile.
 */
export async function overArms<T>(db: D1Database, read: (arm: D1Database, n: Arm) => Promise<T>, arms?: Arm[]): Promise<T[]> {
  const run = (list: Arm[]) => {
    // Several arms: their statements of one step go to D1 together, one statement where they can (compounding).
    if (list.length === 1) return Promise.all(list.map((n) => read(armDb(db, n), n)));
    const together = compounding(db);
    return Promise.all(list.map((n) => read(together(n), n)));
  };
  return arms !== undefined ? run(arms) : withShardArms(db, run);
}

/** Rows of several arms, each in seq order (ascending, or with `desc` descending), as one list in that order, cut at `limit`. An event is in one arm. */
export function mergeBySeq<R extends { seq: number }>(lists: R[][], limit = Infinity, desc = false): R[] {
  const all = lists.length === 1 ? lists[0] : lists.flat().sort((a, b) => (desc ? b.seq - a.seq : a.seq - b.seq));
  return all.length > limit ? all.slice(0, limit) : all;
}

/** A row in list order: newest occurred_at first, then the higher seq. */
export interface Listed {
  occurred_at: string;
  seq: number;
}

/** A page of rows in list order: its next cursor resumes right after the last row looked at (null: the last page). */
export interface ListPage<R extends Listed = Listed> {
  rows: R[];
  nextCursor: string | null;
}

/** Negative when `a` comes first in list order. */
export function listOrder(a: Listed, b: Listed): number {
  return a.occurred_at === b.occurred_at ? b.seq - a.seq : a.occurred_at < b.occurred_at ? 1 : -1;
}

/**
 * The page of the union of the arms' pages, each the first `limit` rows of
 * its arm in list order after the same cursor. An arm whose page has a next
 * cursor looked no further than it, so rows of other arms past the highest
 * such cursor wait for the next page, which resumes there; among the rest,
 * the first `limit` in list order.
 */
export function mergePages<R extends Listed>(pages: ListPage<R>[], limit: number): ListPage<R> {
  if (pages.length === 1) return pages[0];
  const bounds = pages.flatMap((p): Listed[] => {
    const c = p.nextCursor === null ? null : decodeCursor(p.nextCursor);
    return c === null || c.seq === null ? [] : [{ occurred_at: c.occurredAt, seq: c.seq }];
  });
  const bound = bounds.sort(listOrder)[0] ?? null;
  const rows = pages
    .flatMap((p) => p.rows)
    .filter((r) => bound === null || listOrder(r, bound) <= 0)
    .sort(listOrder);
  if (rows.length > limit) {
    const last = rows[limit - 1];
    return { rows: rows.slice(0, limit), nextCursor: encodeCursor(last.occurred_at, last.seq) };
  }
  return { rows, nextCursor: bound === null ? null : encodeCursor(bound.occurred_at, bound.seq) };
}

/** D1's most bound parameters in one statement (developers.cloudflare.com/d1/platform/limits). */
export const D1_MAX_PARAMS = 100;

/** How a statement's parameters are written, outside its quoted text: all `?` (plain), all `?N` (numbered, with the highest N), or neither/mixed/named (null: not compounded). */
export function paramStyle(sql: string): { numbered: boolean; count: number } | null {
  return STYLES.of("", sql, () => readParamStyle(sql));
}
const STYLES = new TextMemo<{ numbered: boolean; count: number } | null>(2_000);

function readParamStyle(sql: string): { numbered: boolean; count: number } | null {
  let plain = 0;
  let highest = 0;
  let numbered = 0;
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i];
    if (c === "'" || c === '"' || c === "`") {
      const end = sql.indexOf(c, i + 1);
      if (end < 0) return null;
      i = end;
    } else if (c === "-" && sql[i + 1] === "-") {
      const end = sql.indexOf("\n", i);
      i = end < 0 ? sql.length : end;
    } else if (c === "?") {
      const digits = /^\d+/.exec(sql.slice(i + 1))?.[0];
      if (digits === undefined) plain++;
      else (numbered++, (highest = Math.max(highest, Number(digits))), (i += digits.length));
    } else if ((c === ":" || c === "@" || c === "$") && /[A-Za-z_]/.test(sql[i + 1] ?? "") && !/[\w]/.test(sql[i - 1] ?? "")) {
      return null;
    }
  }
  if (plain > 0 && numbered > 0) return null;
  return numbered > 0 ? { numbered: true, count: highest } : { numbered: false, count: plain };
}

/** `sql` with each `?N` outside quoted text moved up by `by`. */
function shiftParams(sql: string, by: number): string {
  let out = "";
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i];
    if (c === "'" || c === '"' || c === "`") {
      const end = sql.indexOf(c, i + 1);
      out += sql.slice(i, end + 1);
      i = end;
    } else if (c === "-" && sql[i + 1] === "-") {
      const end = sql.indexOf("\n", i);
      out += sql.slice(i, end < 0 ? sql.length : end);
      i = end < 0 ? sql.length : end - 1;
    } else if (c === "?") {
      const digits = /^\d+/.exec(sql.slice(i + 1))![0];
      out += `?${Number(digits) + by}`;
      i += digits.length;
    } else out += c;
  }
  return out;
}

/** D1 builds SQLite with at most 5 terms in a compound SELECT (SQLite's own default is 500); a sub-select counts its own. */
export const D1_MAX_COMPOUND_TERMS = 5;

/**
 * `terms` as one UNION ALL, in their order, at most D1_MAX_COMPOUND_TERMS of them to a compound: past that, groups
 * of them in sub-selects. `tail` (an ORDER BY and LIMIT) ends the whole and each group alike.
 */
export function unionAll(terms: string[], tail = ""): string {
  if (terms.length <= D1_MAX_COMPOUND_TERMS) return terms.join(" UNION ALL ") + tail;
  const groups: string[] = [];
  for (let i = 0; i < terms.length; i += D1_MAX_COMPOUND_TERMS) groups.push(`SELECT * FROM (${terms.slice(i, i + D1_MAX_COMPOUND_TERMS).join(" UNION ALL ")}${tail})`);
  return unionAll(groups, tail);
}

const READ_ONLY = /^\s*(SELECT|WITH)\b/i;
const WRITES = /\b(INSERT|UPDATE|DELETE|REPLACE|UPSERT)\b/i;

/** A statement waiting for its turn's send; settled with its rows, `armed` when they still carry the compound's __arm column. */
type Pending = { template: string; arm: Arm; sql: string; values: unknown[]; statement: D1PreparedStatement; settle: (result: D1Result<Record<string, unknown>>, armed: boolean) => void; fail: (error: unknown) => void };
type Answer = { result: D1Result<Record<string, unknown>>; armed: boolean };

/** Compound texts (compounding), by the arms they read: one a template and set of arms. */
const COMPOUNDS = new TextMemo<string>(2_000);

/**
 * The arms of one read (`arm` => its database, as armDb), with the
 * statements they issue in one turn of the event loop sent to D1 at once:
 * the same statement of several arms (a step of a read runs the same SQL in
 * each arm) as one compound statement, `SELECT <arm>, * FROM (<the arm's
 * statement>) UNION ALL ...`, each arm's statement run whole and unchanged
 * inside it; the rest beside it in one batch. One statement, not one per arm:
 * D1 answers each statement of a batch at a cost of its own, and six arms as
 * a batch still made a list at 1M events a third slower than one arm
 * (test/bench/README.md, "What periods cost the reads"). A statement that
 * writes, names its parameters or would pass D1's 100 parameters goes alone.
 */
export function compounding(db: D1Database): (arm: Arm) => D1Database {
  let queue: Pending[] = [];
  const send = (items: Pending[]): void => {
    const groups = new Map<string, Pending[]>();
    for (const item of items) groups.set(item.template, [...(groups.get(item.template) ?? []), item]);
    const out: Array<{ statement: D1PreparedStatement; items: Pending[]; compound?: true }> = [];
    for (const group of groups.values()) {
      const style = paramStyle(group[0].template);
      const values = group.reduce((n, i) => n + i.values.length, 0);
      const together = group.length > 1 && style !== null && READ_ONLY.test(group[0].template) && !WRITES.test(group[0].template) && values <= D1_MAX_PARAMS && group.every((i) => i.values.length === style.count);
      if (!together) {
        for (const item of group) out.push({ statement: item.statement, items: [item] });
        continue;
      }
      // The same template in the same arms makes the same text: each item binds style.count values.
      const text = COMPOUNDS.of(group.map((item) => item.arm).join(","), group[0].template, () =>
        unionAll(
          group.map((item, k) => {
            const sql = style.numbered ? shiftParams(item.sql, k * style.count) : item.sql;
            // Newlines: a statement may end in a -- comment.
            return `SELECT ${k} AS __arm, * FROM (\n${sql}\n)`;
          }),
        ),
      );
      const statement = db.prepare(text).bind(...group.flatMap((i) => i.values));
      out.push({ statement, items: group, compound: true });
    }
    const settle = (results: D1Result<Record<string, unknown>>[]) =>
      out.forEach(({ items, compound }, k) => {
        const result = results[k];
        if (!compound) return items[0].settle(result, false);
        // Each arm gets its own rows, in the order its statement gave them, their __arm still on them (the reader
        // takes it off as it reads them: a raw() read makes arrays of them anyway); the rows billed once, on the first.
        const none = { ...result.meta, rows_read: 0, rows_written: 0 };
        const byArm: Record<string, unknown>[][] = items.map(() => []);
        for (const row of result.results) byArm[row.__arm as number].push(row);
        items.forEach((item, arm) => item.settle({ ...result, results: byArm[arm], meta: arm === 0 ? result.meta : none }, true));
      });
    const statements = out.map((o) => o.statement);
    const answer = statements.length === 1 ? statements[0].all<Record<string, unknown>>().then((r) => [r]) : db.batch<Record<string, unknown>>(statements);
    answer.then(settle, (error) => out.forEach(({ items }) => items.forEach((i) => i.fail(error))));
  };
  const flush = () => {
    const items = queue;
    queue = [];
    send(items);
  };
  const real = new WeakMap<object, D1PreparedStatement>();
  const wrap = (template: string, arm: Arm, sql: string, statement: D1PreparedStatement, values: unknown[]): D1PreparedStatement => {
    const answer = () =>
      new Promise<Answer>((settle, fail) => {
        if (queue.length === 0) queueMicrotask(flush);
        queue.push({ template, arm, sql, values, statement, settle: (result, armed) => settle({ result, armed }), fail });
      });
    const bare = ({ __arm, ...row }: Record<string, unknown>) => row;
    const run = async () => {
      const { result, armed } = await answer();
      return armed ? { ...result, results: result.results.map(bare) } : result;
    };
    const wrapper = {
      // A batch sends its values as JSON, where undefined has no place: bound alone, D1 takes it as null.
      bind: (...given: unknown[]) => {
        const bound = given.map((v) => (v === undefined ? null : v));
        return wrap(template, arm, sql, statement.bind(...bound), bound);
      },
      all: run,
      run,
      first: async (column?: string) => {
        const { result, armed } = await answer();
        const row = result.results[0] ?? null;
        if (row === null) return null;
        return column === undefined ? (armed ? bare(row) : row) : (row[column] ?? null);
      },
      // Arrays in column order; a compound's rows lose their first cell, the __arm it put before the statement's columns.
      raw: async (options?: { columnNames?: boolean }) => {
        if (options?.columnNames) throw new Error("compounding: raw() with column names is not read through this wrapper");
        const { result, armed } = await answer();
        return result.results.map((row) => {
          const cells = Object.values(row);
          if (armed) cells.shift();
          return cells;
        });
      },
    };
    real.set(wrapper, statement);
    return wrapper as unknown as D1PreparedStatement;
  };
  return (arm) =>
    ({
      prepare: (sql: string) => {
        const renamed = inPeriod(sql, arm);
        return wrap(sql, arm, renamed, db.prepare(renamed), []);
      },
      // A batch of its own: sent as it is, the statements it was given made of this wrapper's.
      batch: <T>(statements: D1PreparedStatement[]) => db.batch<T>(statements.map((s) => real.get(s) ?? s)),
      exec: (sql: string) => db.exec(inPeriod(sql, arm)),
      withSession: () => {
        throw new Error("compounding: sessions are not used on event shards");
      },
      dump: () => db.dump(),
    }) as unknown as D1Database;
}

/** Ordered compounds (orderedOverArms), by the arms they read: one a term and set of arms. */
const ORDERED = new TextMemo<string>(2_000);

/** The column orderedOverArms adds to each row, last: the arm's place in the list it was given. */
const ARM_COLUMN = "__arm";

/**
 * One statement that reads each of `arms` by its term (`terms`, one an arm,
 * written against the main tables), merged in list order and cut at `limit`
 * (a parameter of theirs, bound once: every term binds the same values),
 * each row with its arm's place in `arms` as a last column (ARM_COLUMN). A
 * term is a walk in list order without ORDER BY or LIMIT (event-query.ts,
 * Statement.ordered), or a whole statement, ordered and cut: SQLite merges
 * the arms' walks as they go (a compound's ORDER BY over terms already in
 * that order sorts nothing; a cut statement's few rows are sorted), so an
 * arm walked in place is read only as far as the page takes rows from it:
 * an actor's page over four periods reads its 51 rows, where a statement a
 * period read up to 51 in each, 179 in all (test/bench/README.md, "An
 * actor's page merged in SQL"). Their columns name occurred_at and seq.
 * Past D1_MAX_COMPOUND_TERMS arms, groups of them, each merged and cut alike.
 */
export function orderedOverArms(terms: string[], arms: Arm[], limit: string): string {
  // Most reads have one term or two (a walk in place and a whole statement), repeated by arm.
  const distinct = [...new Set(terms)];
  const kind = `${arms.join(",")}:${terms.map((t) => distinct.indexOf(t)).join(",")}`;
  return ORDERED.of(kind, distinct.join("\u0000"), () =>
    unionAll(
      arms.map((arm, k) => `SELECT *, ${k} AS ${ARM_COLUMN} FROM (${inPeriod(terms[k], arm)})`),
      ` ORDER BY occurred_at DESC, seq DESC LIMIT ${limit}`,
    ),
  );
}

/**
 * How long after a period's end a row may still land in it: a commit the
 * ledger journaled in the period goes to the arm it was journaled in when it
 * is sent again after a restart or indexed from a backlog
 * (storage/commit-arms.ts, own-writes.ts), usually within seconds. A
 * seventh of the period (a day of a week), two minutes at the least.
 */
export function armGrace(length: number): number {
  return Math.max(2 * ARM_LEAD_MS, Math.floor(length / 7));
}

/**
 * Where a project's rows in one arm lie in list order, as read at one
 * instant: the newest and oldest occurred_at (null: it held none), and
 * whether rows may land in it while that reading is kept (`growing`: the
 * main tables of a shard without periods, or of a project that has committed
 * there (MAIN_COMMIT_SQL); a period from shortly before its start till
 * armGrace after its end), which makes its reading no bound at all.
 */
export interface ArmSpan {
  arm: Arm;
  hi: string | null;
  lo: string | null;
  growing: boolean;
  /**
   * Of a growing period (undefined of the main tables, and for a reader that
   * cannot see the marks): the lowest occurred_at a row of the project in it
   * can have, the least of its span's when read and its low mark (PERIOD_LOW_SQL);
   * null: it holds none. A commit that lands lower after the reading lowers
   * the mark in its own batch, which a read finds in its first batch
   * (withProjectArmSpans).
   */
  from?: string | null;
  /**
   * Of a growing period begun more than ARM_HELD_MS ago (an hour of a week)
   * that held rows of the project when read: the oldest occurred_at among
   * them. It holds the project's newest hour or more, a page's likeliest
   * source from there up (pageOverSpans counts it as one of the arms a
   * first read reaches). No bound: rows land in it after the reading.
   */
  heldFrom?: string;
  /**
   * Of a growing period past its end (in its grace: armGrace): the highest
   * occurred_at a row in it can have, however many land after the reading
   * (armCeiling). A bound above, as a settled arm's `hi` is, by which
   * pageOverSpans ranks it with the settled arms: a first page that the new
   * period fills above it does not read it.
   */
  ceiling?: string;
  /** Of a settled arm that held rows of the project when read: what they are (ArmFacts). */
  facts?: ArmFacts;
}

/**
 * What a settled arm's rows of a project are, read with its span: what lets
 * a read there walk one index in place, in list order, where a growing arm
 * needs more walks, merged (event-query.ts, selectEvents' `facts`), so that
 * its page merges with other arms' as they are walked (orderedOverArms).
 * Rows that land in a settled arm after the reading (none should) are missed
 * by it as they are by its span.
 */
export interface ArmFacts {
  /** The actions the project has sets of there (action_sets: live-sets.ts), in order; null: more than ARM_SET_ACTIONS. */
  setActions: string[] | null;
  /** Whether an event of the project there names a second target or more (its index, event_targets' rows). */
  laterTargets: boolean;
}

/** How many actions with sets in an arm ArmFacts lists: an application sends a few dozen actions, and sets hold its most repeated. */
export const ARM_SET_ACTIONS = 64;

/**
 * SQL: a project's ArmFacts in the tables it names (an arm's, through
 * armDb): its actions with sets, a seek each in action_sets' key, up to one
 * past ARM_SET_ACTIONS, as a JSON array; and whether it has a row in the
 * second target's index or in event_targets, a seek each.
 */
export const ARM_FACTS_SQL =
  "WITH RECURSIVE acts(a) AS (SELECT (SELECT min(action) FROM action_sets WHERE project_id = ?1) " +
  "UNION ALL SELECT (SELECT min(action) FROM action_sets WHERE project_id = ?1 AND action > a) FROM acts WHERE a IS NOT NULL " +
  `LIMIT ${ARM_SET_ACTIONS + 1}) ` +
  "SELECT (SELECT json_group_array(a) FROM acts WHERE a IS NOT NULL) AS actions, " +
  "EXISTS (SELECT 1 FROM events INDEXED BY events_second_target_id_idx WHERE project_id = ?1 AND json_array_length(targets) > 1) " +
  "OR EXISTS (SELECT 1 FROM event_targets WHERE project_id = ?1) AS later";

/** ArmFacts from a row of ARM_FACTS_SQL. */
export function armFacts(row: { actions: string; later: number }): ArmFacts {
  const actions = JSON.parse(row.actions) as string[];
  return { setActions: actions.length > ARM_SET_ACTIONS ? null : actions.sort(), laterTargets: row.later === 1 };
}

/**
 * The main tables' mark (migration 0049): every commit written to the main
 * tables writes it in its own batch, the first time a row and after that
 * none. A project without it has had no commit there since the mark began,
 * or has no row left there (the daily cron then takes the mark away:
 * storage/period-upkeep.ts): its rows there (none, or older ones) lie where
 * a reading of their span says, as a settled period's do, until a commit
 * there sets the mark, which a read finds in its first batch
 * (storage/own-writes.ts).
 */
export const MAIN_COMMIT_SQL = "INSERT OR IGNORE INTO main_commits (project_id) VALUES (?)";

/**
 * A period's low mark (migration 0050): every commit written to a period
 * writes, in its own batch, the lowest occurred_at of its rows (?3) when
 * it is lower than the mark the project has there (a row the first time, and
 * for a commit that reaches below all before it, a backdated one; none
 * after). So the rows of a growing period lie at or above the least of its
 * span as read and its mark as read later: a read skips it when its page
 * starts below that (pageOverSpans), and reads again when the mark, looked
 * at in its first batch, has gone lower than it took (withProjectArmSpans).
 * A period's marks are deleted with it (dropPeriodSql).
 */
export const PERIOD_LOW_SQL =
  "INSERT INTO period_lows (project_id, period, lo) VALUES (?1, ?2, ?3) ON CONFLICT (project_id, period) DO UPDATE SET lo = excluded.lo WHERE excluded.lo < period_lows.lo";

/** SQL: the project's marks, one row: whether its main tables are marked (MAIN_COMMIT_SQL), and its periods' low marks (PERIOD_LOW_SQL) as a JSON object by period. */
export const MARKS_SQL =
  "SELECT EXISTS (SELECT 1 FROM main_commits WHERE project_id = ?1) AS main, (SELECT json_group_object(period, lo) FROM period_lows WHERE project_id = ?1) AS lows";

/** The project's marks as MARKS_SQL reads them. */
export interface ArmMarks {
  main: boolean;
  /** Each period's low mark, by its number. */
  lows: Record<string, string>;
}

/** ArmMarks from a row of MARKS_SQL's columns. */
export function armMarks(row: { main: number; lows: string | null }): ArmMarks {
  return { main: row.main === 1, lows: row.lows === null ? {} : (JSON.parse(row.lows) as Record<string, string>) };
}

/**
 * Whether reading `spans` may be wrong for commits that landed since they
 * were read, which marks looked at later tell (markedSpans): main tables
 * taken for settled, or a growing period with a lowest occurred_at.
 */
export function marksMatter(spans: readonly ArmSpan[]): boolean {
  return spans.some((s) => (s.arm === null ? !s.growing : s.growing && s.from !== undefined));
}

/**
 * `spans` as `marks` looked at since say they are: the main tables growing
 * once marked, a growing period's lowest occurred_at lowered to its mark.
 * With none (null: a reader that cannot see the marks), the main tables
 * growing and every growing period unbounded. The same array when nothing
 * changes.
 */
export function markedSpans(spans: ArmSpan[], marks: ArmMarks | null): ArmSpan[] {
  let changed = false;
  const marked = spans.map((s): ArmSpan => {
    if (s.arm === null) {
      if (s.growing || (marks !== null && !marks.main)) return s;
      changed = true;
      // Growing, its facts say nothing of the rows that land.
      const { facts: _, ...growing } = s;
      return { ...growing, growing: true };
    }
    if (!s.growing || s.from === undefined) return s;
    const low = marks === null ? null : marks.lows[String(s.arm)];
    if (low === undefined || (low !== null && s.from !== null && s.from <= low)) return s;
    changed = true;
    if (low === null) {
      const { from: _, ...unbounded } = s;
      return unbounded;
    }
    return { ...s, from: low };
  });
  return changed ? marked : spans;
}

/**
 * How long a growing period must have been begun before its span says
 * where it holds the project's rows from (ArmSpan.heldFrom), so that a first
 * read takes it alone: an hour, in which a project sending a page of events
 * fills a first page there (one sending fewer learns to read the next arm
 * too: ReachMemory). At most its grace, for periods shorter than a week.
 */
export const ARM_HELD_MS = 3600_000;

/**
 * The highest occurred_at a row in period `arm` can have: a commit goes to
 * the period of the instant the ledger received it (commitArm), whose clock
 * may lead a worker's by ARM_LEAD_MS, and no occurred_at more than
 * MAX_FUTURE_SKEW_MS ahead of the worker's clock is accepted. Rows come into
 * a period by commits alone: a shard move brings them into the main tables
 * (storage/shard-copy.ts).
 */
export function armCeiling(arm: number, length: number): string {
  return new Date((arm + 1) * length + ARM_LEAD_MS + MAX_FUTURE_SKEW_MS).toISOString();
}

/** Whether rows may land in period `arm` between `now` and `now + keepMs`: commits stamp their own clock, which may be ARM_LEAD_MS ahead. (The main tables' mark says it of them: armSpans.) */
export function armGrowing(arm: number, now: number, keepMs: number, length: number): boolean {
  return arm * length - ARM_LEAD_MS <= now + keepMs && now <= (arm + 1) * length + armGrace(length);
}

/**
 * SQL: a project's newest and oldest occurred_at in the tables it names (an
 * arm's, through armDb): four seeks, the time index's ends and the live
 * commit spans' ends (a commit's live rows have no time index entry: their
 * span holds them at its received_at, event-query.ts, timeWalk). Rows
 * deleted since leave these wider, never narrower.
 */
export const ARM_SPAN_SQL =
  "SELECT max(coalesce(ti, si), coalesce(si, ti)) AS hi, min(coalesce(tl, sl), coalesce(sl, tl)) AS lo FROM (SELECT " +
  "(SELECT occurred_at FROM events WHERE project_id = ?1 AND time_in_span = 0 ORDER BY occurred_at DESC LIMIT 1) AS ti, " +
  "(SELECT occurred_at FROM events WHERE project_id = ?1 AND time_in_span = 0 ORDER BY occurred_at LIMIT 1) AS tl, " +
  "(SELECT received_at FROM commit_spans WHERE project_id = ?1 AND live = 1 ORDER BY received_at DESC LIMIT 1) AS si, " +
  "(SELECT received_at FROM commit_spans WHERE project_id = ?1 AND live = 1 ORDER BY received_at LIMIT 1) AS sl)";

/**
 * Each arm's span of a project's rows (ArmSpan), read now in one batch, kept
 * `keepMs` by the caller. The main tables of a shard with periods are read
 * as a settled arm when the project has no main tables' mark, and a growing
 * period holds rows from the least of its span's lowest and its low mark
 * up: a read that keeps this answer finds a mark set or lowered since in its
 * own first batch (storage/shards.ts, withProjectArmSpans).
 */
export async function armSpans(db: D1Database, projectId: string, arms: Arm[], now: number, keepMs: number, length: number): Promise<ArmSpan[]> {
  // Without periods, the main tables are the one arm: nothing to bound, nothing read, as before periods.
  const periods = arms.some((arm) => arm !== null);
  const growing = arms.map((arm) => (arm === null ? !periods : armGrowing(arm, now, keepMs, length)));
  // Every arm's span is read but the growing main tables' (none read without periods): a growing period's for its
  // lowest occurred_at (`from`, with its mark: a row landing lower after the reading lowers the mark), and, once
  // it has grown for ARM_HELD_MS, for whether it holds rows of the project and from where (heldFrom: a row landing
  // after the reading only leaves one taken for empty, and the first read then reaches a settled arm as well).
  const aged = arms.map((arm, k) => growing[k] && arm !== null && now >= arm * length + Math.min(ARM_HELD_MS, armGrace(length)));
  // A growing period past its end is bounded above all the same (armCeiling).
  const ended = arms.map((arm, k) => growing[k] && arm !== null && now >= (arm + 1) * length);
  const spanned = arms.filter((arm, k) => !growing[k] || arm !== null);
  // And each settled arm's facts, in the same batch (one more compound statement).
  const settled = arms.filter((_, k) => !growing[k]);
  const together = compounding(db);
  const [row, read, facts] = await Promise.all([
    periods ? together(null).prepare(MARKS_SQL).bind(projectId).first<{ main: number; lows: string | null }>() : null,
    Promise.all(spanned.map((arm) => together(arm).prepare(ARM_SPAN_SQL).bind(projectId).first<{ hi: string | null; lo: string | null }>())),
    Promise.all(settled.map((arm) => together(arm).prepare(ARM_FACTS_SQL).bind(projectId).first<{ actions: string; later: number }>())),
  ]);
  const spans = arms.map((arm, k): ArmSpan => {
    const span = read[spanned.indexOf(arm)] ?? null;
    if (growing[k] && arm === null) return { arm, hi: null, lo: null, growing: true };
    if (growing[k])
      return {
        arm,
        hi: null,
        lo: null,
        growing: true,
        from: span?.lo ?? null,
        ...(aged[k] && span?.lo != null ? { heldFrom: span.lo } : {}),
        ...(ended[k] ? { ceiling: armCeiling(arm!, length) } : {}),
      };
    const held = facts[settled.indexOf(arm)];
    return { arm, hi: span?.hi ?? null, lo: span?.lo ?? null, growing: false, ...(span?.hi != null && held != null ? { facts: armFacts(held) } : {}) };
  });
  // The marks as a read's first batch takes them: the main tables growing once marked, a period's mark below its span.
  return row === null ? spans : markedSpans(spans, armMarks(row));
}

/** The dates a read asks for, inclusive, as a selection holds them (model/event-query.ts); null: unbounded. */
export interface Dates {
  dateFrom: string | null;
  dateTo: string | null;
}
const NO_DATES: Dates = { dateFrom: null, dateTo: null };

/** A cursor's seq above every seq (cursor.ts takes up to 15 digits): the page ends above its instant, the next takes every row at it. */
export const SEQ_ABOVE_ALL = 999_999_999_999_999;

/**
 * A page in list order after `after` (null: from the newest) over arms
 * whose spans are known, reading as few arms as the spans allow: first the
 * growing arms (but a growing period that holds no row of the project, or
 * none at or below where the page starts: ArmSpan.from) and the settled arm
 * that reaches highest (none past a week's first hour: the current period,
 * holding rows of the project from below where the page starts, counts as
 * that arm, ArmSpan.heldFrom; a period past its end, bounded above by its
 * ceiling, is ranked with the settled arms: ArmSpan.ceiling), then only the
 * settled arms that reach above where those stopped, or, where they ran out
 * having found rows, the next settled arm down (a period's rows lie in its
 * own stretch of time: the next is where the page most likely goes on),
 * or every arm left when they found none. An arm with no row of
 * the project, or none at or below `after` and within the dates asked for
 * (`within`: a selection's date_from and date_to), is not read. The rest wait
 * below the page's next cursor, where the next page starts. The same pages,
 * walked to the end, list every row once, as reading every arm does. `read`
 * is told when the arms it reads after others are read because those ran
 * out before the page was full (`ranOut`): what it looks for is rare there,
 * likely here too, and it may choose its walk by that (event-read.ts,
 * searchEvents), giving the same rows. With `reach` above 1, the first read
 * takes that many arms from the top: a filter that holds few rows
 * of each period (a rare actor) finds the rest of its page in the next one
 * down in the same round trip, where a second read would have gone for it,
 * at the price of one more arm's `limit` rows in a filter that fills its
 * page in the first (history-read.ts, listHistory). With `memory`, the first
 * read takes as many settled arms more as the filter's last page needed
 * (ReachMemory).
 */
export async function pageOverSpans<R extends Listed>(
  spans: ArmSpan[],
  after: Cursor | null,
  limit: number,
  read: (arms: Arm[], ranOut: boolean) => Promise<ListPage<R>[]>,
  within: Dates = NO_DATES,
  reach = 1,
  memory?: ReachMemory,
): Promise<ListPage<R>> {
  // The arms are chosen below the tighter of the cursor and date_to (inclusive: above every seq at its instant), and
  // a settled arm whose rows all lie before date_from holds none of the page. The arms' reads apply both themselves.
  const { dateFrom, dateTo } = within;
  const below: Cursor | null = dateTo !== null && (after === null || dateTo < after.occurredAt) ? { occurredAt: dateTo, seq: SEQ_ABOVE_ALL } : after;
  // A period past its end is ranked as the settled arms are, by its ceiling: its rows lie from its lowest (anywhere
  // below, when that is not known) up to there, however many land.
  const ranked = spans.map((s): ArmSpan => (s.growing && s.ceiling !== undefined ? { ...s, growing: false, hi: s.from === null ? null : s.ceiling, lo: s.from ?? "" } : s));
  // An arm's highest instant the page can take from it; null: none.
  const top = (s: ArmSpan): string | null => {
    if (s.growing) {
      // A growing period holds no row of the project (from: null), or none at or below where the page starts.
      if (s.from === null || (s.from !== undefined && below !== null && s.from > below.occurredAt)) return null;
      return below?.occurredAt ?? "\uffff";
    }
    if (s.hi === null || s.lo === null) return null;
    if (below !== null && s.lo > below.occurredAt) return null;
    if (dateFrom !== null && s.hi < dateFrom) return null;
    return below !== null && s.hi > below.occurredAt ? below.occurredAt : s.hi;
  };
  const candidates = ranked.flatMap((s) => {
    const t = top(s);
    return t === null ? [] : [{ arm: s.arm, top: t, lo: s.lo, growing: s.growing }];
  });
  if (candidates.length === 0) return { rows: [], nextCursor: null };
  // The `reach` highest tops among the settled arms (arms tied at one are read together). A current period that held
  // rows of the project at or below where the page starts counts as one of them: a page it fills then reads no
  // settled period's rows for nothing.
  const current = ranked.some((s) => s.growing && s.heldFrom !== undefined && (below === null || s.heldFrom <= below.occurredAt)) ? 1 : 0;
  const own = reach - current;
  // And as many more as the filter's last page needed (ReachMemory).
  const highest = [...new Set(candidates.filter((c) => !c.growing).map((c) => c.top))].sort().reverse().slice(0, own + (memory?.more ?? 0));
  const first = candidates.filter((c) => c.growing || highest.includes(c.top));
  const rest = candidates.filter((c) => !first.includes(c));
  const pages = await read(first.map((c) => c.arm), false);
  if (rest.length === 0) return taught(memory, own, first, pages, mergePages(pages, limit));
  const so = mergePages(pages, limit);
  // A page the first arms filled though each ran out (rows of two periods) stops at its last row, as a cut one does.
  const last = so.rows[so.rows.length - 1];
  const cut = so.nextCursor ?? (so.rows.length >= limit ? encodeCursor(last.occurred_at, last.seq) : null);
  const stop = cut === null ? null : decodeCursor(cut);
  // What the second read takes, and where the page ends at the latest for the arms it leaves unread.
  let more: typeof rest;
  let bound: string | null = null;
  if (stop !== null) {
    // Where the first arms stopped; every arm reaching that instant is read too (ties in occurred_at go by seq).
    // Arms left unread hold rows only below the stop: the page ends there at the latest, and the next starts there.
    more = rest.filter((c) => c.top >= stop.occurredAt);
    bound = cut;
  } else if (so.rows.length === 0) {
    // The first arms hold nothing after the cursor: a rare value, likely in any of the rest. All of them, in one read.
    more = rest;
  } else {
    // The first arms ran out with rows found: the next arm down (with any that overlap it) is the likely rest of
    // the page, not every older period. The unread ones lie below all it holds: the page ends above them. (Reading
    // as many arms down as the rate of rows found says, in one read, measured slower here: test/bench/README.md.)
    const next = rest.reduce((m, c) => (c.top > m.top ? c : m));
    more = rest.filter((c) => c.top >= next.lo!);
    const unread = rest.filter((c) => !more.includes(c));
    if (unread.length > 0) bound = encodeCursor(unread.reduce((m, c) => (c.top > m ? c.top : m), unread[0].top), SEQ_ABOVE_ALL);
  }
  const all = more.length > 0 ? [...pages, ...(await read(more.map((c) => c.arm), stop === null))] : pages;
  return taught(memory, own, [...first, ...more], all, mergePages(bound !== null ? [...all, { rows: [], nextCursor: bound }] : all, limit));
}

/**
 * What the pages of one filter needed before (pageOverSpans): how many
 * settled arms more than its first read takes the last one held rows of
 * (`more`, 0 when none is known), told what each page needed (`learn`). A
 * filter whose values are rare in each period (a rare action, a target id)
 * fills its page from several: its first read then takes that many more
 * arms down, where it would have found its page short and read the next
 * (a round trip more, every page). A filter that fills its page from the
 * arms its first read takes learns 0 and reads as before. Counted beyond the
 * first read's own (a current period that may hold the page counts in it).
 * A caller keeps first pages and deep ones apart: a deep page's need tells
 * little about the first's, which is the same every time. Walked to the
 * end, the pages list the same rows either way; a page read with more arms
 * may hold more of them before its cursor.
 */
export interface ReachMemory {
  more: number;
  learn(more: number): void;
}

/** `page`, once `memory` is told how many of the settled `arms` read (`pages`, in their order) beyond the first read's `own` held rows of it. An empty page teaches nothing. */
function taught<R extends Listed>(memory: ReachMemory | undefined, own: number, arms: { growing: boolean }[], pages: ListPage<R>[], page: ListPage<R>): ListPage<R> {
  if (memory !== undefined && page.rows.length > 0) {
    const onPage = new Set<Listed>(page.rows);
    const held = arms.filter((c, k) => !c.growing && pages[k].rows.some((r) => onPage.has(r))).length;
    memory.learn(Math.max(0, held - own));
  }
  return page;
}
