import type { AuditOutbox } from "./audit-outbox";
import { auditEvent, type AuditActor, type AuditOrigin } from "./self-audit";

/**
 * Legal holds, kept in the ledger's own SQLite storage (never D1, where anyone
 * who can write the database could lift one). A hold names an organization,
 * an actor id, or both (that actor's events in that organization). Held events
 * are never purged by retention, and an erasure that would touch one is
 * refused. Released holds stay listed, with who released them and when.
 */
export interface LegalHold {
  id: string;
  organization: string | null;
  actor_id: string | null;
  reason: string;
  placed_at: string;
  placed_by: string;
  released_at: string | null;
  released_by: string | null;
}

/** Active holds per project: each is checked against every purge candidate. */
export const MAX_ACTIVE_HOLDS = 100;
export const MAX_REASON_CHARS = 1000;

const COLUMNS = "id, organization, actor_id, reason, placed_at, placed_by, released_at, released_by";

export class LegalHolds {
  private readonly sql: SqlStorage;

  constructor(private readonly storage: DurableObjectStorage) {
    this.sql = storage.sql;
    this.sql.exec(
      "CREATE TABLE IF NOT EXISTS legal_holds (id TEXT PRIMARY KEY, organization TEXT, actor_id TEXT, reason TEXT NOT NULL, " +
        "placed_at TEXT NOT NULL, placed_by TEXT NOT NULL, released_at TEXT, released_by TEXT)",
    );
  }

  active(): LegalHold[] {
    return this.sql.exec<LegalHold & Record<string, SqlStorageValue>>(`SELECT ${COLUMNS} FROM legal_holds WHERE released_at IS NULL ORDER BY placed_at, id`).toArray();
  }

  /** Every hold, newest first, released ones included. */
  list(): LegalHold[] {
    return this.sql.exec<LegalHold & Record<string, SqlStorageValue>>(`SELECT ${COLUMNS} FROM legal_holds ORDER BY placed_at DESC, id DESC`).toArray();
  }

  get(id: string): LegalHold | null {
    return this.sql.exec<LegalHold & Record<string, SqlStorageValue>>(`SELECT ${COLUMNS} FROM legal_holds WHERE id = ?`, id).toArray()[0] ?? null;
  }

  /** Synchronous: the hold and its self-audit event are stored together. Null: MAX_ACTIVE_HOLDS are active already. */
  place(input: { organization: string | null; actor_id: string | null; reason: string }, by: AuditActor, origin: AuditOrigin, outbox: AuditOutbox): LegalHold | null {
    // The route checks this too; the ledger never stores a hold of nothing (or of everything).
    if (input.organization === null && input.actor_id === null) throw new Error("a legal hold names an organization, an actor id, or both");
    if (this.active().length >= MAX_ACTIVE_HOLDS) return null;
    const hold: LegalHold = {
      id: `lh_${crypto.randomUUID().replaceAll("-", "").slice(0, 20)}`,
      ...input,
      placed_at: new Date().toISOString(),
      placed_by: by.id,
      released_at: null,
      released_by: null,
    };
    this.storage.transactionSync(() => {
      this.sql.exec(
        `INSERT INTO legal_holds (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL)`,
        hold.id,
        hold.organization,
        hold.actor_id,
        hold.reason,
        hold.placed_at,
        hold.placed_by,
      );
      outbox.stage(auditEvent({ action: "witness.legal_hold.placed", actor: by, targets: [{ type: "legal_hold", id: hold.id }], metadata: holdScope(hold) }, origin));
    });
    return hold;
  }

  /** Synchronous, like place. already: it was released before (nothing changes, nothing is recorded again). */
  release(id: string, by: AuditActor, origin: AuditOrigin, outbox: AuditOutbox): { hold: LegalHold; already: boolean } | null {
    const hold = this.get(id);
    if (!hold || hold.released_at !== null) return hold && { hold, already: true };
    const released = { ...hold, released_at: new Date().toISOString(), released_by: by.id };
    this.storage.transactionSync(() => {
      this.sql.exec("UPDATE legal_holds SET released_at = ?, released_by = ? WHERE id = ?", released.released_at, released.released_by, id);
      outbox.stage(auditEvent({ action: "witness.legal_hold.released", actor: by, targets: [{ type: "legal_hold", id }], metadata: holdScope(hold) }, origin));
    });
    return { hold: released, already: false };
  }

  /** After an erasure: released holds no longer keep the erased actor id in clear. */
  forgetActor(actorId: string): void {
    this.sql.exec("UPDATE legal_holds SET actor_id = NULL WHERE actor_id = ? AND released_at IS NOT NULL", actorId);
  }
}

/**
 * What the chain records of a hold: its organization and whether it names an
 * actor, never the actor id or the reason. The chain cannot be edited, so a
 * held actor erased after the hold's release would otherwise stay named in it.
 */
function holdScope(hold: LegalHold) {
  return { organization: hold.organization, names_actor: hold.actor_id !== null };
}

/** Whether any hold covers an event (every field a hold names must match). */
export function isHeld(holds: LegalHold[], row: { organization: string | null; actor_id: string | null }): boolean {
  return holds.some((h) => (h.organization === null || h.organization === row.organization) && (h.actor_id === null || h.actor_id === row.actor_id));
}

/**
 * isHeld as an SQL condition over an events row (never NULL), with one bound
 * value: the holds as JSON, so any number of them fits D1's 100 bound values.
 */
export function heldSql(holds: LegalHold[]): { sql: string; params: string[] } {
  if (holds.length === 0) return { sql: "0", params: [] };
  const scopes = holds.map((h) => ({ o: h.organization, a: h.actor_id }));
  return {
    sql:
      "EXISTS (SELECT 1 FROM json_each(?) h WHERE (h.value ->> 'o' IS NULL OR h.value ->> 'o' = organization) " +
      "AND (h.value ->> 'a' IS NULL OR h.value ->> 'a' = actor_id))",
    params: [JSON.stringify(scopes)],
  };
}
