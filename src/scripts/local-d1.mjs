// The local D1 databases of `wrangler dev`, opened directly with Node's built-in SQLite:
// a script that would start wrangler (5-15 s) for each query takes milliseconds instead.
// Used only where the database file already exists and is fully migrated; otherwise (no
// file yet, pending migrations, Node without node:sqlite) callers go through wrangler.
import { createHash, createHmac } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";

/** node:sqlite's DatabaseSync (Node >= 22.5), or null. Its one-time ExperimentalWarning is not shown: it says nothing to an operator. */
const DatabaseSync = await (async () => {
  const emit = process.emitWarning;
  process.emitWarning = (warning, ...rest) => (/SQLite/.test(String(warning?.message ?? warning)) ? undefined : emit.call(process, warning, ...rest));
  try {
    return (await import("node:sqlite")).DatabaseSync;
  } catch {
    return null;
  } finally {
    process.emitWarning = emit;
  }
})();

export const sqliteAvailable = DatabaseSync !== null;

/**
 * Miniflare keeps a D1 database in a SQLite-backed Durable Object of class
 * D1DatabaseObject named by the database id, and names its file by that object's
 * id: workerd's idFromName, HMAC-SHA256 keyed by SHA-256 of the namespace's unique key.
 */
export function d1FileName(databaseId) {
  const key = createHash("sha256").update("miniflare-D1DatabaseObject").digest();
  const name = createHmac("sha256", key).update(databaseId).digest().subarray(0, 16);
  const check = createHmac("sha256", key).update(name).digest().subarray(0, 16);
  return `${Buffer.concat([name, check]).toString("hex")}.sqlite`;
}

/** The SQLite file of the local database with this id under a wrangler state directory (default .wrangler/state), if it exists. */
export function localD1File(stateDir, databaseId) {
  const file = join(stateDir, "v3", "d1", "miniflare-D1DatabaseObject", d1FileName(databaseId));
  return existsSync(file) ? file : null;
}

const open = new Map();
/** One connection per file for the whole run; waits up to 10 s for `npm run dev` to finish a write. */
function connect(file) {
  let db = open.get(file);
  if (!db) {
    db = new DatabaseSync(file);
    db.exec("PRAGMA busy_timeout = 10000");
    open.set(file, db);
  }
  return db;
}

/** Migration files not yet recorded in the database's d1_migrations table (wrangler's own bookkeeping). */
export function pendingMigrations(file, migrationsDir) {
  const wanted = readdirSync(migrationsDir).filter((f) => f.endsWith(".sql"));
  let applied;
  try {
    applied = new Set(connect(file).prepare("SELECT name FROM d1_migrations").all().map((r) => r.name));
  } catch {
    return wanted;
  }
  return wanted.filter((f) => !applied.has(f));
}

/**
 * Splits SQL text into statements at top-level semicolons (not inside quotes
 * or comments), as `wrangler d1 execute --command` accepts several at once.
 */
export function splitStatements(text) {
  const out = [];
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === "'" || ch === '"' || ch === "`") {
      const end = text.indexOf(ch, i + 1);
      i = end === -1 ? text.length : end; // a doubled quote ('') simply closes and reopens
    } else if (ch === "-" && text[i + 1] === "-") {
      const end = text.indexOf("\n", i);
      i = end === -1 ? text.length : end;
    } else if (ch === ";") {
      out.push(text.slice(start, i));
      start = i + 1;
    }
  }
  out.push(text.slice(start));
  return out.map((s) => s.trim()).filter(Boolean);
}

/** Runs the statements in one transaction (as D1 runs a batch) and returns every row they produce, in order. */
export function runLocal(file, command) {
  const db = connect(file);
  const statements = splitStatements(command);
  if (statements.length === 1) return db.prepare(statements[0]).all();
  db.exec("BEGIN IMMEDIATE");
  try {
    const rows = statements.flatMap((s) => db.prepare(s).all());
    db.exec("COMMIT");
    return rows;
  } catch (error) {
    db.exec("ROLLBACK");
    throw error;
  }
}
