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
  } finally {
    await db.batch([`${t}_plain`, `${t}_idx`, `${t}_keyed`].map((name) => db.prepare(`DROP TABLE IF EXISTS ${name}`)));
  }
  return c.json({ n, shapes });
}
