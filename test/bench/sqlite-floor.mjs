// What SQLite alone does with batch ingest's write on this machine: the schema of migrations/
// (events, its filter indexes, the FTS5 index and its trigger), the ledger's own INSERT statements
// (src/chain/event-insert.ts, through a stand-in for D1's prepare/bind), one transaction per
// 100 events, in Node's built-in SQLite with no fsync. No worker, no D1 plumbing, no hashing:
// a ceiling for batch ingest, not a measure of it.
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { insertEventsStatements } from "../../src/chain/event-insert.ts";
import { uuidV7 } from "../../src/lib/crypto.ts";
import { ROOT, sampleEvent } from "./lib.mjs";

const hex = (bytes) => randomBytes(bytes).toString("hex");

/** A stored row as the ledger writes it: the event's columns plus the chain fields, sized like real ones; one receive time a commit, which the id carries. */
function storedRow(i, projectId, now) {
  const e = sampleEvent(i);
  return {
    id: uuidV7(Date.parse(now), 0x5eed), project_id: projectId, seq: i + 1, action: e.action, organization: e.organization,
    actor_id: e.actor.id, actor_type: e.actor.type, actor_name: e.actor.name, actor_email: e.actor.email,
    targets: JSON.stringify(e.targets), metadata: JSON.stringify(e.metadata), occurred_at: now, received_at: now,
    ip_address: "127.0.0.2", user_agent: "bench", pii_salt: randomBytes(16).toString("base64url"),
    pii_commitment: hex(32), hash: hex(32), prev_hash: hex(32), signature: `v1:${randomBytes(32).toString("base64url")}`,
  };
}

/** Every migration of checkout `root` (this one by default), in order, as D1 applies them. */
export function applyMigrations(db, root = ROOT) {
  const migrations = join(root, "migrations");
  for (const file of readdirSync(migrations).filter((f) => f.endsWith(".sql")).sort()) {
    for (const statement of readFileSync(join(migrations, file), "utf8").split("--> statement-breakpoint")) {
      if (statement.trim()) db.exec(statement);
    }
  }
}

/** A D1 stand-in for the ledger's statement builders (insertEventsStatements): prepare/bind make {sql, params}. */
export const d1 = { prepare: (sql) => ({ bind: (...params) => ({ sql, params }) }) };

export function sqliteInsertFloor({ total, batchSize = 100 }) {
  const dir = mkdtempSync(join(tmpdir(), "witness-bench-sqlite-"));
  const db = new DatabaseSync(join(dir, "floor.sqlite"));
  try {
    db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF;");
    applyMigrations(db);
    // Only the statements are timed, not making the rows.
    let ms = 0;
    for (let from = 0; from < total; from += batchSize) {
      const rows = [];
      const now = new Date().toISOString();
      for (let i = from; i < Math.min(total, from + batchSize); i++) rows.push(storedRow(i, "bench-floor", now));
      const started = performance.now();
      db.exec("BEGIN");
      for (const { sql, params } of insertEventsStatements(d1, rows)) db.prepare(sql).run(...params);
      db.exec("COMMIT");
      ms += performance.now() - started;
    }
    const seconds = ms / 1000;
    return { total, seconds, perSecond: total / seconds };
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
