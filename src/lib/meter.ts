import { AsyncLocalStorage } from "node:async_hooks";

/**
 * Cloudflare's per-invocation limits, metered where `wrangler dev` and the
 * tests would otherwise never enforce them. Each incoming request, cron run,
 * Durable Object call and alarm is one invocation with its own budget
 * (developers.cloudflare.com/workers/platform/limits, /d1/platform/limits):
 *   - 1,000 D1 queries (Workers Paid), every statement of a batch counted;
 *   - 10,000 subrequests: fetch, R2 operations, Durable Object calls, and D1
 *     queries too (internal services count against the same limit).
 * With METER = "enforce" (the tests, the benches) an invocation that passes a
 * limit throws as production would, and the worst invocation of each kind is
 * kept for the benches' report. Unset (production): nothing is wrapped.
 * Memory and CPU per invocation cannot be read from inside workerd; the
 * benches measure them from outside.
 */
export const LIMITS = { d1Queries: 1000, subrequests: 10_000 } as const;

export class LimitExceededError extends Error {
  constructor(invocation: string, what: string, limit: number) {
    super(`${invocation} passed Cloudflare's limit of ${limit.toLocaleString("en-US")} ${what} per invocation`);
    this.name = "LimitExceededError";
  }
}

/**
 * Rows read and written, as billed: D1 from each statement's own meta
 * (rows_read, rows_written), a Durable Object's SQLite from its cursors
 * (rowsRead, rowsWritten) and one row per key its KV API touches (SQLite-backed
 * objects keep those in a table too). These are what Cloudflare bills per
 * million (developers.cloudflare.com/d1/platform/pricing,
 * /durable-objects/platform/pricing).
 */
export interface RowCounts {
  d1Read: number;
  d1Written: number;
  doRead: number;
  doWritten: number;
}

const noRows = (): RowCounts => ({ d1Read: 0, d1Written: 0, doRead: 0, doWritten: 0 });
/** Everything metered since the last reset, in or out of an invocation: what the benches divide by events. */
let totals = noRows();

export function meterTotals(): RowCounts {
  return { ...totals };
}

export class Invocation {
  d1Queries = 0;
  subrequests = 0;
  rows = noRows();
  /** owner: the Durable Object instance whose call this is, so its own method calls stay in it. */
  constructor(
    readonly name: string,
    readonly owner: object | null = null,
  ) {}

  d1(statements = 1): void {
    this.d1Queries += statements;
    this.subrequest(statements);
    if (this.d1Queries > LIMITS.d1Queries) throw new LimitExceededError(this.name, "D1 queries", LIMITS.d1Queries);
  }

  subrequest(count = 1): void {
    this.subrequests += count;
    note(this);
    if (this.subrequests > LIMITS.subrequests) throw new LimitExceededError(this.name, "subrequests", LIMITS.subrequests);
  }
}

const current = new AsyncLocalStorage<Invocation>();
type Worst = { d1Queries: number; subrequests: number; rowsRead: number; rowsWritten: number };
/** Per kind of invocation (its name), the most it used: what the benches print. */
const worst = new Map<string, Worst>();

/** Counts rows a statement read and wrote: in the invocation under way, if any, and in the totals. */
export function countRows(where: "d1" | "do", read: number, written: number): void {
  if (!read && !written) return;
  const add = (r: RowCounts) => {
    if (where === "d1") {
      r.d1Read += read;
      r.d1Written += written;
    } else {
      r.doRead += read;
      r.doWritten += written;
    }
  };
  add(totals);
  const invocation = current.getStore();
  if (invocation) {
    add(invocation.rows);
    note(invocation);
  }
}

export function meterEnabled(env: { METER?: string }): boolean {
  return env.METER === "enforce";
}

/**
 * Runs `work` as one invocation named `name`; everything it calls through a
 * metered env counts against it, including a streamed body it returns (the
 * body's reads run in the same async context). With an `owner`, a call made
 * from inside an invocation of that same owner (a Durable Object calling its
 * own methods) stays in that invocation.
 */
export function asInvocation<T>(name: string, work: () => T, owner: object | null = null): T {
  const running = current.getStore();
  if (owner !== null && running?.owner === owner) return work();
  const invocation = new Invocation(name, owner);
  note(invocation);
  return current.run(invocation, work);
}

/** The invocation under way, to carry into work the runtime calls later (a response body's reads). */
export function currentInvocation(): Invocation | undefined {
  return current.getStore();
}

/** Runs `work` inside an invocation already under way. */
export function within<T>(invocation: Invocation, work: () => T): T {
  return current.run(invocation, work);
}

/** Kept on every charge, not when the invocation returns: a streamed body goes on spending after that. */
function note(invocation: Invocation): void {
  const seen = worst.get(invocation.name);
  const rowsRead = invocation.rows.d1Read + invocation.rows.doRead;
  const rowsWritten = invocation.rows.d1Written + invocation.rows.doWritten;
  if (seen && seen.d1Queries >= invocation.d1Queries && seen.subrequests >= invocation.subrequests && seen.rowsRead >= rowsRead && seen.rowsWritten >= rowsWritten) return;
  worst.set(invocation.name, {
    d1Queries: Math.max(seen?.d1Queries ?? 0, invocation.d1Queries),
    subrequests: Math.max(seen?.subrequests ?? 0, invocation.subrequests),
    rowsRead: Math.max(seen?.rowsRead ?? 0, rowsRead),
    rowsWritten: Math.max(seen?.rowsWritten ?? 0, rowsWritten),
  });
}

/** The worst invocation of each kind seen by this isolate, heaviest first. */
export function meterReport(): Array<{ invocation: string } & Worst> {
  return [...worst.entries()]
    .map(([invocation, used]) => ({ invocation, ...used }))
    .sort((a, b) => b.subrequests - a.subrequests || b.d1Queries - a.d1Queries);
}

export function resetMeterReport(): void {
  worst.clear();
  totals = noRows();
}

/** Counts against the invocation under way, if any (work outside every invocation is not metered). */
export const charge = (count: (i: Invocation) => void) => {
  const invocation = current.getStore();
  if (invocation) count(invocation);
};
