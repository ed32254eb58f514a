import { DurableObject } from "cloudflare:workers";
import type { Context } from "hono";

/**
 * Issue 38, item 3: what a commit would cost if the ledger's own SQLite held
 * it (a journal) and D1 were indexed from it later. A Durable Object with
 * no Witness code writes one commit of `events` sealed-event-sized rows and
 * waits until storage says it is durable (`sync()`), the way the ledger's
 * answer would wait; then deletes it, as the indexer would once D1 has it.
 * Two layouts: the commit packed into one row (its rows as one JSON text), and
 * a row an event. Each call is one commit, so the client times the round
 * trip; the object reports the SQLite rows its cursors wrote (what a Durable
 * Object bills) and the bytes it stored.
 */
/** What one call stored: SQLite rows its cursors wrote for the commit and for its delete, and the commit's bytes. */
type Stored = { written: number; deleted: number; bytes: number };

const NOTHING: Stored = { written: 0, deleted: 0, bytes: 0 };

export class JournalFloor extends DurableObject<Env> {
  private seq = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS journal (first_seq INTEGER PRIMARY KEY, body TEXT NOT NULL)");
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS journal_rows (seq INTEGER PRIMARY KEY, body TEXT NOT NULL)");
  }

  /** Nothing stored: the hop from the Worker and back, the floor under both layouts. */
  async hop(): Promise<Stored> {
    return NOTHING;
  }

  /** The commit's rows made and joined as "packed" makes them, nothing stored: what the ledger has already done when it would write. */
  async build(events: number): Promise<Stored> {
    return { ...NOTHING, bytes: packed(sealedRows(this.seq + 1, events)).length };
  }

  async commit(layout: "packed" | "rows", events: number): Promise<Stored> {
    const sql = this.ctx.storage.sql;
    const first = this.seq + 1;
    const rows = sealedRows(first, events);
    this.seq += events;
    let written = 0;
    let bytes = 0;
    if (layout === "packed") {
      const body = packed(rows);
      bytes = body.length;
      written += sql.exec("INSERT INTO journal (first_seq, body) VALUES (?, ?)", first, body).rowsWritten;
    } else {
      for (let i = 0; i < rows.length; i++) {
        bytes += rows[i].length;
        written += sql.exec("INSERT INTO journal_rows (seq, body) VALUES (?, ?)", first + i, rows[i]).rowsWritten;
      }
    }
    // The answer would wait for this: the commit is durable once storage has synced.
    await this.ctx.storage.sync();
    const deleted =
      layout === "packed"
        ? sql.exec("DELETE FROM journal WHERE first_seq = ?", first).rowsWritten
        : sql.exec("DELETE FROM journal_rows WHERE seq BETWEEN ? AND ?", first, first + events - 1).rowsWritten;
    return { written, deleted, bytes };
  }
}

/** A commit's rows as the packed layout stores them: one JSON array. */
const packed = (rows: string[]) => `[${rows.join(",")}]`;

const sealedRows = (first: number, events: number) => Array.from({ length: events }, (_, i) => sealedRow(first + i));

/** A sealed event as the ledger holds one (src/db/schema.ts EventRow), about 1 KB as JSON. */
function sealedRow(seq: number): string {
  const hex = (n: number) => (seq * 2654435761 + n).toString(16).padStart(8, "0").repeat(8);
  return JSON.stringify({
    id: `0193a5c1-7e2b-7${hex(1).slice(0, 3)}-8${hex(2).slice(0, 3)}-${hex(3).slice(0, 12)}`,
    project_id: "bench-journal",
    seq,
    action: "document.updated",
    actor_id: `user_${seq % 5000}`,
    actor_type: "user",
    actor_name: `User ${seq % 5000}`,
    actor_email: `user${seq % 5000}@acme.test`,
    organization: `org_${seq % 50}`,
    targets: JSON.stringify([{ type: "document", id: `doc_${seq % 20000}`, name: "Quarterly plan" }]),
    metadata: JSON.stringify({ plan: "pro", request: seq }),
    ip_address: "203.0.113.7",
    user_agent: "acme-app/2.3 (+https://acme.test)",
    occurred_at: "2026-12-01T03:04:05.678Z",
    received_at: "2026-12-01T03:04:05.678Z",
    prev_hash: hex(4),
    hash: hex(5),
    signature: `v1:${hex(6)}`,
  });
}

/** GET /journal-floor?layout=packed|rows|hop|build&events=1000: one commit, answered once durable. */
export async function journalFloor(c: Context<{ Bindings: { JOURNAL: DurableObjectNamespace<JournalFloor> } }>) {
  const layout = c.req.query("layout") ?? "packed";
  const events = Math.min(Number(c.req.query("events") ?? "1000"), 5000);
  const stub = c.env.JOURNAL.get(c.env.JOURNAL.idFromName(`journal-${layout}`));
  if (layout === "hop") return c.json(await stub.hop());
  if (layout === "build") return c.json(await stub.build(events));
  return c.json(await stub.commit(layout === "rows" ? "rows" : "packed", events));
}
