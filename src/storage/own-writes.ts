import { armMarks, MARKS_SQL, type ArmMarks } from "../model/periods";

/**
 * Reads that see a project's own writes while its ledger answers appends
 * before D1 has them (issue 38, item 3; src/chain/commit-backlog.ts).
 *
 * While the project's shard lags, its ledger sets a backlog mark in the shard
 * (`ingest_backlog`, migration 0047) before it answers any append ahead of D1,
 * and deletes it in the batch that indexes the last such append. So a read
 * that finds no mark in the same snapshot as its rows saw every append
 * answered before it began. This wrapper of the shard's D1Database puts the
 * mark's lookup into the same batch as every statement a reader runs (a batch
 * is one transaction: one snapshot). When the mark is there, it asks the
 * ledger to index what it has answered, then reads again.
 *
 * A statement read with `raw()` goes in the batch too, and its objects are
 * made arrays again in column order: a batch answers objects, which would
 * lose a repeated column name, so a statement read with raw() through this
 * wrapper names each of its columns once, none of them a number (reads of
 * events do: SHAPE_SELECT). Looking for the mark first, then reading, would
 * cost every such read a round trip more.
 *
 * Once per wrapper, which is once per request (eventsReadDb): a snapshot with
 * no mark holds every append answered before the request began, and so does
 * every later one (D1 only gains commits), so the statements after the first
 * go as they are.
 *
 * What the mark costs a read was measured before it was built: nothing
 * measurable in one batch (test/bench/README.md, "A journal in the ledger's
 * own SQLite").
 *
 * The same statement reads the project's arms' marks (model/periods.ts,
 * MARKS_SQL): the main tables' (migration 0049), which a commit written
 * there sets, and each period's low mark (migration 0050), which a commit
 * written there lowers to its lowest occurred_at. A read that took the
 * main tables for a settled arm, or a growing period for holding nothing
 * below some instant, reads again when they say otherwise (shards.ts,
 * withProjectArmSpans). Marks are only ever added or lowered, so what the
 * first batch saw holds for the request: a commit answered before the
 * request began had set them by then.
 */

/** How long a read waits for the ledger to index its backlog before it answers 429 with Retry-After. */
const INDEX_WAIT_MS = 10_000;

/** The message a read gives up with when the backlog is not indexed in time: app.ts answers it with 429 and Retry-After. */
export const INDEXING_BEHIND = "This project's newest events are still being indexed";

/** SQL: a row when the project's backlog mark is set. */
const BACKLOG_MARK_SQL = "SELECT 1 AS marked FROM ingest_backlog WHERE project_id = ?1";

/** The project's backlog mark, a row when it is set: what a worker's look for a lost answer and a ledger's start ask (a read's first batch looks with lookStatement). */
export function markStatement(db: D1Database, projectId: string): D1PreparedStatement {
  return db.prepare(BACKLOG_MARK_SQL).bind(projectId);
}

/** The first batch's look: one row, whether the backlog mark is set, and the arms' marks (MARKS_SQL's columns). */
function lookStatement(db: D1Database, projectId: string): D1PreparedStatement {
  return db.prepare(`SELECT EXISTS (${BACKLOG_MARK_SQL}) AS marked, m.* FROM (${MARKS_SQL}) m`).bind(projectId);
}

type Look = { marked: number; main: number; lows: string | null };

class OwnWrites {
  /** The project's arms' marks, from the first batch's snapshot (or the one after indexing); undefined before it. */
  marks: ArmMarks | undefined;

  constructor(
    readonly db: D1Database,
    private readonly projectId: string,
    private readonly indexed: () => Promise<void>,
  ) {}

  private look(): D1PreparedStatement {
    return lookStatement(this.db, this.projectId);
  }

  private async caughtUp(): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${INDEXING_BEHIND}; retry in a few seconds`)), INDEX_WAIT_MS)));
    try {
      await Promise.race([this.indexed(), late]);
      this.settled = true;
    } finally {
      clearTimeout(timer);
    }
  }

  /** The appends answered before the request began are in D1: known from a snapshot with no mark, or once the ledger indexed. */
  private settled = false;

  /** Runs statements with the mark in the same batch; with a mark, again once the ledger has indexed. */
  async batch<T>(statements: D1PreparedStatement[]): Promise<D1Result<T>[]> {
    if (this.settled) return this.db.batch<T>(statements);
    const [look, ...results] = await this.db.batch([this.look(), ...statements]);
    const { marked, ...marks } = look.results[0] as Look;
    this.marks = armMarks(marks);
    if (marked === 0) {
      this.settled = true;
      return results as D1Result<T>[];
    }
    await this.caughtUp();
    // Indexing the backlog has written to the arms: their marks are looked at again with the rows.
    const [again, ...indexed] = await this.db.batch([this.look(), ...statements]);
    this.marks = armMarks(again.results[0] as Look);
    return indexed as D1Result<T>[];
  }

  /** A statement read as arrays: in the batch as objects, then arrays in column order, until settled. */
  async raw<T = unknown[]>(statement: D1PreparedStatement): Promise<T[]> {
    if (this.settled) return statement.raw<T>();
    const [result] = await this.batch<Record<string, unknown>>([statement]);
    return result.results.map((row) => Object.values(row) as T);
  }
}

function statement(own: OwnWrites, inner: D1PreparedStatement): D1PreparedStatement {
  const one = async (): Promise<D1Result<Record<string, unknown>>> => (await own.batch<Record<string, unknown>>([inner]))[0];
  const wrapped = {
    inner,
    // A batch sends its values as JSON, where undefined has no place: bound alone, D1 takes it as null.
    bind: (...values: unknown[]) => statement(own, inner.bind(...values.map((v) => (v === undefined ? null : v)))),
    first: async (column?: string) => {
      const row = (await one()).results[0] ?? null;
      return column === undefined || row === null ? row : (row[column] ?? null);
    },
    all: one,
    run: one,
    raw: (options?: { columnNames?: boolean }) => {
      if (options?.columnNames) throw new Error("ownWritesDb: raw() with column names is not read through this wrapper");
      return own.raw(inner);
    },
  };
  return wrapped as unknown as D1PreparedStatement;
}

const innerOf = (s: D1PreparedStatement) => (s as unknown as { inner?: D1PreparedStatement }).inner ?? s;

const owners = new WeakMap<object, OwnWrites>();

/**
 * The project's arms' marks (model/periods.ts, MARKS_SQL) as `db`'s first
 * batch saw them, holding every commit answered before the request began,
 * asked now when it has run none; null when `db` does not see its own
 * writes (not made by ownWritesDb), whose reader cannot know.
 */
export async function marksSeen(db: D1Database): Promise<ArmMarks | null> {
  const own = owners.get(db);
  if (own === undefined) return null;
  if (own.marks === undefined) await own.batch([]);
  return own.marks!;
}

/** What marksSeen would answer without asking D1: undefined before `db`'s first batch. */
export function marksSeenYet(db: D1Database): ArmMarks | null | undefined {
  const own = owners.get(db);
  return own === undefined ? null : own.marks;
}

/** The shard's database for reading a project's events, seeing every append answered before the read began. */
export function ownWritesDb(db: D1Database, projectId: string, indexed: () => Promise<void>): D1Database {
  const own = new OwnWrites(db, projectId, indexed);
  const wrapped = {
    prepare: (sql: string) => statement(own, db.prepare(sql)),
    batch: <T>(statements: D1PreparedStatement[]) => own.batch<T>(statements.map(innerOf)),
    exec: (sql: string) => db.exec(sql),
    withSession: () => {
      throw new Error("ownWritesDb: sessions are not used on event shards");
    },
    dump: () => db.dump(),
  };
  owners.set(wrapped, own);
  return wrapped as unknown as D1Database;
}
