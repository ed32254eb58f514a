import type { Context } from "hono";

/**
 * Issue 38, item 3, step 5: what a backlog mark would add to a read. A read
 * of a project's events that must see its own writes while the ledger
 * indexes behind would read the project's mark in the same D1 batch as its
 * rows (test/bench/README.md, "A journal in the ledger's own SQLite"). Here,
 * in the baseline's own D1 and no Witness code: a table of `n` event-like
 * rows with an index on (p, a, seq), and a page of 51 by one `a` newest
 * first, read as one statement (`plain`), in a batch after the mark's
 * lookup by primary key (`batched`), or after it as a query answered first
 * (`first`). setup makes the tables once; the client times each call.
 */
export async function markFloor(c: Context<{ Bindings: { DB: D1Database } }>) {
  const db = c.env.DB;
  const read = c.req.query("read") ?? "plain";
  if (read === "setup") {
    const n = Math.min(Number(c.req.query("n") ?? "100000"), 1_000_000);
    await db.batch([
      db.prepare("DROP TABLE IF EXISTS mark_floor_rows"),
      db.prepare("DROP TABLE IF EXISTS mark_floor_marks"),
      db.prepare("CREATE TABLE mark_floor_rows (row_id INTEGER PRIMARY KEY, p TEXT, seq INTEGER, a TEXT, body TEXT)"),
      db.prepare("CREATE INDEX mark_floor_rows_a ON mark_floor_rows (p, a, seq)"),
      db.prepare("CREATE TABLE mark_floor_marks (project_id TEXT PRIMARY KEY, since TEXT NOT NULL) WITHOUT ROWID"),
      db.prepare(
        "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?1) INSERT INTO mark_floor_rows (p, seq, a, body) SELECT 'p', i, 'a' || (i % 50), printf('%.600c', 'x') FROM s",
      ).bind(n),
      // Another project's mark: the lookup finds a key, not this project's.
      db.prepare("INSERT INTO mark_floor_marks (project_id, since) VALUES ('other', '2026-12-01T00:00:00Z')"),
    ]);
    return c.json({ n });
  }
  const page = db.prepare("SELECT row_id, seq, a, body FROM mark_floor_rows WHERE p = ?1 AND a = ?2 ORDER BY seq DESC LIMIT 51").bind("p", "a7");
  const mark = db.prepare("SELECT since FROM mark_floor_marks WHERE project_id = ?1").bind("p");
  if (read === "batched") {
    const [marked, rows] = await db.batch([mark, page]);
    return c.json({ marked: marked.results.length > 0, rows: rows.results.length });
  }
  if (read === "first") {
    const marked = await mark.first();
    const rows = await page.all();
    return c.json({ marked: marked !== null, rows: rows.results.length });
  }
  const rows = await page.all();
  return c.json({ marked: null, rows: rows.results.length });
}
