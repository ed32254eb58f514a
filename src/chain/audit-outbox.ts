import type { NewEvent } from "../model/new-event";
import { findIdempotent } from "./idempotency";

/**
 * The self-audit events of actions the ledger itself performs (retention
 * changes, erasures, legal holds), staged in the ledger's own storage in the
 * same synchronous step as the change they record: a crash after the change
 * cannot lose its record. The ledger appends staged events right after the
 * action and, for one a crash left behind, when it next starts. Each is
 * appended under its own idempotency key, so an append whose answer was lost
 * is found again rather than appended twice (within the idempotency window).
 *
 * An `open` event belongs to an action still running (an erasure stages its
 * event when it begins and settles it when it ends); only settled events are
 * appended. A new ledger instance settles every open one as it is: it records
 * an action that a crash interrupted. An action run by a durable job (an
 * erasure's, src/chain/erasure-steps.ts) outlives ledger instances: its event
 * is staged `open: "job"` and stays open until the job settles it.
 */
export type AppendKeyed = (events: NewEvent[], idempotencyKey: string) => Promise<unknown>;

export class AuditOutbox {
  private draining: Promise<void> = Promise.resolve();

  constructor(private readonly sql: SqlStorage) {
    sql.exec("CREATE TABLE IF NOT EXISTS audit_outbox (id INTEGER PRIMARY KEY, key TEXT NOT NULL, event TEXT NOT NULL, open INTEGER NOT NULL DEFAULT 0)");
    // Built once per ledger instance: an open event here is from one that crashed mid-action.
    sql.exec("UPDATE audit_outbox SET open = 0 WHERE open = 1");
    // open = 2: held by a durable job, which settles it itself when it ends.
  }

  /** Synchronous, so it joins the storage transaction of the change it records. Returns its id (for settle). */
  stage(event: NewEvent, options: { open?: boolean | "job" } = {}): number {
    return this.sql
      .exec<{ id: number }>(
        "INSERT INTO audit_outbox (key, event, open) VALUES (?, ?, ?) RETURNING id",
        `witness-audit:${crypto.randomUUID()}`,
        JSON.stringify(event),
        options.open === "job" ? 2 : options.open ? 1 : 0,
      )
      .one().id;
  }

  /** Replaces an open event with its final form and releases it for appending. */
  settle(id: number, event: NewEvent): void {
    this.sql.exec("UPDATE audit_outbox SET event = ?, open = 0 WHERE id = ?", JSON.stringify(event), id);
  }

  pending(): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM audit_outbox").one().n;
  }

  /**
   * Appends every settled event, oldest first, one at a time (drains never
   * overlap). A failed append stops the drain; the event waits for the next.
   */
  drain(env: Env, db: () => D1Database, projectId: string, append: AppendKeyed): Promise<void> {
    const run = async () => {
      for (;;) {
        const next = this.sql
          .exec<{ id: number; key: string; event: string }>("SELECT id, key, event FROM audit_outbox WHERE open = 0 ORDER BY id LIMIT 1")
          .toArray()[0];
        if (!next) return;
        if (!(await findIdempotent(env, db(), projectId, next.key))) await append([JSON.parse(next.event) as NewEvent], next.key);
        this.sql.exec("DELETE FROM audit_outbox WHERE id = ?", next.id);
      }
    };
    this.draining = this.draining.then(run, run);
    return this.draining;
  }
}
