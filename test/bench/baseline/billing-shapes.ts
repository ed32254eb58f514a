import type { Context } from "hono";

/**
 * What local D1 bills (meta.rows_written) for each shape of write Witness's
 * layouts are made of, in a scratch table of the baseline's own database:
 * the arithmetic of storage v2 (test/bench/README.md, "Where the rows stop")
 * rests on these, so they are measured, not assumed. Each shape runs on
 * `n` rows and reports rows written per row.
 */
export async function billingShapes(c: Context<{ Bindings: { DB: D1Database } }>) {
  const n = Math.min(Number(c.req.query("n") ?? "1000"), 10_000);
  const db = c.env.DB;
  const shapes: { shape: string; perRow: number }[] = [];
  const run = async (shape: string, sql: string, rows = n) => {
    const statement = db.prepare(sql);
    const { meta } = await (sql.includes("?1") ? statement.bind(n) : statement).run();
    shapes.push({ shape, perRow: meta.rows_written / rows });
  };
  // Fresh tables each call: a name of this call's own, dropped at the end whatever happens.
  const t = `billing_${Date.now().toString(36)}`;
  const series = "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?1)";
  try {
    await db.batch([
      db.prepare(`CREATE TABLE ${t}_plain (row_id INTEGER PRIMARY KEY, p TEXT, seq INTEGER, a TEXT, b TEXT, c TEXT, part INTEGER, d TEXT)`),
      db.prepare(`CREATE TABLE ${t}_idx (row_id INTEGER PRIMARY KEY, p TEXT, seq INTEGER, a TEXT, b TEXT, c TEXT, part INTEGER, d TEXT)`),
      db.prepare(`CREATE UNIQUE INDEX ${t}_idx_seq ON ${t}_idx (p, seq)`),
      db.prepare(`CREATE INDEX ${t}_idx_a ON ${t}_idx (p, a, seq)`),
      db.prepare(`CREATE INDEX ${t}_idx_b ON ${t}_idx (p, b, seq)`),
      db.prepare(`CREATE INDEX ${t}_idx_c ON ${t}_idx (p, c, seq) WHERE part = 0`),
      db.prepare(`CREATE TABLE ${t}_keyed (p TEXT, seq INTEGER, a TEXT, b TEXT, c TEXT, part INTEGER, PRIMARY KEY (p, seq)) WITHOUT ROWID`),
      db.prepare(`CREATE INDEX ${t}_keyed_a ON ${t}_keyed (p, a, seq)`),
      db.prepare(`CREATE INDEX ${t}_keyed_b ON ${t}_keyed (p, b, seq)`),
    ]);
    const values = "SELECT 'p', i, 'a' || (i % 50), 'b' || i, 'c' || i, i % 2 FROM s";
    await run("insert, a table row with no index", `${series} INSERT INTO ${t}_plain (p, seq, a, b, c, part) ${values}`);
    await run(
      "insert, a table row with 3 indexes and a partial one that takes every other row",
      `${series} INSERT INTO ${t}_idx (p, seq, a, b, c, part) ${values}`,
    );
    await run("insert, WITHOUT ROWID keyed (p, seq), 2 indexes", `${series} INSERT INTO ${t}_keyed (p, seq, a, b, c, part) ${values}`);
    await run("update of a column no index holds", `UPDATE ${t}_idx SET d = 'x' WHERE p = 'p' AND seq <= ?1`);
    await run("update of a column 1 index holds", `UPDATE ${t}_idx SET b = b || 'x' WHERE p = 'p' AND seq <= ?1`);
    await run("delete by range, a row with 3 indexes", `DELETE FROM ${t}_idx WHERE p = 'p' AND seq <= ?1 / 2`, n / 2);
    await run("delete with no WHERE (SQLite's truncation) of the other half", `DELETE FROM ${t}_idx`, n / 2);
    await run("delete by range, WITHOUT ROWID", `DELETE FROM ${t}_keyed WHERE p = 'p' AND seq <= ?1`);
    await run("index made over a table of n rows", `CREATE INDEX ${t}_plain_a ON ${t}_plain (p, a, seq)`);
    await run("drop of a table of n rows and its index", `DROP TABLE ${t}_plain`);
    shapes.push(...(await searchEntries(db, `${t}_fts`)));
  } finally {
    await db.batch([`${t}_plain`, `${t}_idx`, `${t}_keyed`, `${t}_fts`].map((name) => db.prepare(`DROP TABLE IF EXISTS ${name}`)));
  }
  return c.json({ n, shapes });
}

/**
 * The search index's share of an event: entries of 16 events' words (8 each,
 * behind their slot's tag, as search-index.ts writes them) in a table made as
 * migration 0004 makes events_search, 38 entries a statement (a commit of 600
 * events), 60 of them; then deleted 38 at a time, as an archive's delete
 * does. FTS5 keeps its index in shadow tables of its own (segments, their
 * merges, each entry's size), written by FTS5 itself, not by the statement.
 */
async function searchEntries(db: D1Database, table: string) {
  const ENTRIES = 38, STATEMENTS = 60, EVENTS = ENTRIES * 16 * STATEMENTS;
  await db.prepare(`CREATE VIRTUAL TABLE ${table} USING fts5(words, content='', contentless_delete=1, tokenize='ascii', prefix='8 9')`).run();
  const slots = "0123456789abcdef";
  const text = (entry: number) =>
    Array.from({ length: 16 }, (_, slot) => {
      const e = entry * 16 + slot;
      const words = ["doc", ["read", "shared", "login"][e % 3], "user", `u${e % 5000}`, `user${e % 5000}`, "acme", "test", `o${e % 50}`];
      return words.map((w) => `q1w2e${slots[slot]}${w}`).join(" ");
    }).join(" ");
  let inserted = 0;
  let deleted = 0;
  for (let s = 0; s < STATEMENTS; s++) {
    const statement = db.prepare(`INSERT INTO ${table} (rowid, words) VALUES ${Array.from({ length: ENTRIES }, () => "(?, ?)").join(", ")}`);
    const params = Array.from({ length: ENTRIES }, (_, i) => [s * ENTRIES + i + 1, text(s * ENTRIES + i)]).flat();
    inserted += (await statement.bind(...params).run()).meta.rows_written;
  }
  for (let s = 0; s < STATEMENTS; s++) {
    const statement = db.prepare(`DELETE FROM ${table} WHERE rowid BETWEEN ?1 AND ?2`).bind(s * ENTRIES + 1, (s + 1) * ENTRIES);
    deleted += (await statement.run()).meta.rows_written;
  }
  return [
    { shape: "insert, search entries of 16 events (FTS5), a row per event", perRow: inserted / EVENTS },
    { shape: "delete of the same entries, a row per event", perRow: deleted / EVENTS },
  ];
}
