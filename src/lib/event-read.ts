import type { EventRow } from "../db/schema";
import { type Cursor, encodeCursor } from "./cursor";
import { selectEvents, type Selection, type Statement } from "./event-query";
import { ftsExpression, matchesAll } from "./search-query";

export interface Page {
  rows: EventRow[];
  /** Resumes right after the last row; null on the last page. */
  nextCursor: string | null;
}

export const EMPTY_PAGE: Page = { rows: [], nextCursor: null };

async function all<T>(db: D1Database, statement: Statement): Promise<T[]> {
  const { results } = await db.prepare(statement.sql).bind(...statement.params).all<T>();
  return results;
}

/** rows holds up to limit + 1 rows: the extra one only says that another page exists. */
function toPage(rows: EventRow[], limit: number): Page {
  if (rows.length <= limit) return { rows, nextCursor: null };
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { rows: page, nextCursor: encodeCursor(last.occurred_at, last.seq) };
}

export async function listEvents(db: D1Database, sel: Selection, cursor: Cursor | null, limit: number): Promise<Page> {
  return toPage(await all<EventRow>(db, selectEvents(sel, { columns: "e.*", cursor, limit: limit + 1 })), limit);
}

/** How many events of the list a search checks itself before handing over to FTS5. */
export const SCAN_WINDOW = 1000;

interface Candidate {
  row_id: number;
  occurred_at: string;
  seq: number;
  action: string;
  actor_name: string | null;
  actor_email: string | null;
  actor_id: string | null;
}

/**
 * FTS5 is fast for rare terms but slow for common ones: a prefix term
 * gathers every hit in the index (all projects) before SQLite can sort
 * them into list order. So a search first walks the list index itself and
 * checks the newest SCAN_WINDOW events in JavaScript; a common term fills
 * the page right there. Only when the window runs out does FTS5 take over
 * for the rest, below the last event checked, where it only has rarer hits
 * to sort.
 */
export async function searchEvents(
  db: D1Database,
  sel: Selection,
  terms: string[],
  cursor: Cursor | null,
  limit: number,
): Promise<Page> {
  const want = limit + 1;
  const window = await all<Candidate>(
    db,
    selectEvents(sel, {
      columns: "e.row_id, e.occurred_at, e.seq, e.action, e.actor_name, e.actor_email, e.actor_id",
      cursor,
      limit: SCAN_WINDOW,
    }),
  );
  const hits = window.filter((r) => matchesAll(terms, [r.action, r.actor_name, r.actor_email, r.actor_id])).slice(0, want);
  let rows: EventRow[] = [];
  if (hits.length > 0) {
    const { results } = await db
      .prepare("SELECT * FROM events WHERE row_id IN (SELECT value FROM json_each(?)) ORDER BY occurred_at DESC, seq DESC")
      .bind(JSON.stringify(hits.map((h) => h.row_id)))
      .all<EventRow>();
    rows = results;
  }
  if (hits.length < want && window.length === SCAN_WINDOW) {
    const last = window[window.length - 1];
    const below = { occurredAt: last.occurred_at, seq: last.seq };
    rows = rows.concat(
      await all<EventRow>(
        db,
        selectEvents(sel, { columns: "e.*", cursor: below, limit: want - hits.length, match: ftsExpression(terms) }),
      ),
    );
  }
  return toPage(rows, limit);
}
