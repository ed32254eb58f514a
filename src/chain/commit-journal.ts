import type { EventRow } from "../db/schema";
import type { NamedAppend } from "../model/commit-spans";
import { rowsBySeq } from "../model/row-keys";
import { armDb, MAIN_COMMIT_SQL, PERIOD_LOW_SQL, type Arm } from "../model/periods";
import type { Head } from "./chain-check";
import { insertEventsStatements } from "./event-insert";
import { isGivenUpRefusal } from "./landed-appends";
import { idempotencyStatements } from "./seal-events";

/**
 * The commits the ledger is writing to D1, kept in the ledger's own SQLite
 * from before their D1 batch is sent (issue 38, item 3, step 1). A commit is
 * durable once its journal is: if the runtime stops the ledger anywhere after
 * that, the next instance sends the same batch again at its start, or finds
 * that D1 already has it (resendJournal), instead of losing it.
 *
 * While D1 keeps up, the ledger answers after D1, and only the newest commit
 * is kept, in slot 0, never deleted: the next commit writes over it, and a
 * journal whose commit is at or below the head is done. So a commit costs one
 * Durable Object row (a part per 512 Ki characters of rows), whatever becomes
 * of it, and no delete. While D1 lags, the ledger answers commits once they
 * are journaled (chain/commit-backlog.ts): each keeps its own slot until it is
 * indexed, and slots are written over, not deleted, once free again.
 *
 * A lost answer is asked of the ledger, which looks in its backlog first and
 * then in D1 (chain/landed-appends.ts). D1's given-up names keep that sound
 * for a commit answered after D1: a batch sent again after its worker gave an
 * append of it up is refused whole, so it lands before the worker's look or
 * never (the plan: test/bench/README.md, "A journal in the ledger's own
 * SQLite").
 */
export interface JournalEntry {
  /** The head the commit follows. */
  after: Head;
  rows: EventRow[];
  named: NamedAppend[];
  /** Appends under an Idempotency-Key, by the seqs of their rows. */
  keyed: Array<{ key: string; requestHash: string | null; first: number; last: number }>;
  /** The period its rows go to (model/periods.ts; storage/commit-arms.ts), fixed when it is journaled so a resend goes there too; absent or null: the main tables. */
  arm?: Arm;
}

/** Characters a part holds: well under a Durable Object row's 2 MB in UTF-8 (3 bytes at most a character here). */
const PART_CHARS = 512 * 1024;

/** A slot's parts are rows slot x SLOT_PARTS + i: slot 0 is what the table held before slots (one commit). */
const SLOT_PARTS = 1 << 16;

/** A journaled commit and the slot it is kept in. */
export interface Journaled {
  slot: number;
  entry: JournalEntry;
}

export class CommitJournal {
  constructor(private readonly sql: SqlStorage) {
    sql.exec("CREATE TABLE IF NOT EXISTS commit_journal (part INTEGER PRIMARY KEY, parts INTEGER NOT NULL, body TEXT NOT NULL)");
  }

  /**
   * Keeps `entry` in `slot`, over what the slot held. Synchronous: it is in
   * the storage transaction of the code that calls it. A commit answered
   * after D1 always takes slot 0; commits answered before D1 has them (a
   * backlog: chain/commit-backlog.ts) each keep a slot until indexed.
   */
  write(entry: JournalEntry, slot = 0): void {
    const text = JSON.stringify(entry);
    const parts = Math.max(1, Math.ceil(text.length / PART_CHARS));
    const base = slot * SLOT_PARTS;
    for (let i = 0; i < parts; i++) {
      this.sql.exec("INSERT OR REPLACE INTO commit_journal (part, parts, body) VALUES (?, ?, ?)", base + i, parts, text.slice(i * PART_CHARS, (i + 1) * PART_CHARS));
    }
    // A larger commit's parts past this one's: only when there are some (a delete that finds none writes nothing).
    this.sql.exec("DELETE FROM commit_journal WHERE part >= ? AND part < ?", base + parts, base + SLOT_PARTS);
  }

  /** Every whole commit the journal keeps, by slot. */
  entries(): Journaled[] {
    const rows = this.sql.exec<{ part: number; parts: number; body: string }>("SELECT part, parts, body FROM commit_journal ORDER BY part").toArray();
    const bySlot = new Map<number, typeof rows>();
    for (const row of rows) {
      const slot = Math.floor(row.part / SLOT_PARTS);
      const parts = bySlot.get(slot);
      if (parts) parts.push(row);
      else bySlot.set(slot, [row]);
    }
    return [...bySlot].flatMap(([slot, parts]) => (parts.length === parts[0].parts ? [{ slot, entry: JSON.parse(parts.map((r) => r.body).join("")) as JournalEntry }] : []));
  }

  /** The journal's commits that follow `head`, one after another, in chain order. */
  chainFrom(head: Head): Journaled[] {
    const all = this.entries();
    const chain: Journaled[] = [];
    let at = head;
    for (;;) {
      const next = all.find((j) => j.entry.after.seq === at.seq && j.entry.after.hash === at.hash && j.entry.rows.length > 0);
      if (!next) return chain;
      chain.push(next);
      const last = next.entry.rows[next.entry.rows.length - 1];
      at = { seq: last.seq, hash: last.hash };
    }
  }

  /** The journal's commit when it follows `head`: written, and its outcome not known to this instance. Null otherwise. */
  after(head: Head): JournalEntry | null {
    return this.chainFrom(head)[0]?.entry ?? null;
  }

  /** Forgets a slot's commit (every slot's when none is named): D1 refused it, or the ledger answered it as not stored, so it must never be sent again. */
  clear(slot?: number): void {
    if (slot === undefined) this.sql.exec("DELETE FROM commit_journal");
    else this.sql.exec("DELETE FROM commit_journal WHERE part >= ? AND part < ?", slot * SLOT_PARTS, (slot + 1) * SLOT_PARTS);
  }

  /**
   * Forgets the commits that are done (at or below `head`, or cut off from
   * it), under the commit lock: their rows carry personal data, which an
   * erasure must not leave behind here. A commit still to be sent again is kept.
   */
  dropDone(head: Head): void {
    const kept = new Set(this.chainFrom(head).map((j) => j.slot));
    const slots = this.sql.exec<{ slot: number }>("SELECT DISTINCT part / ? AS slot FROM commit_journal", SLOT_PARTS).toArray();
    for (const { slot } of slots) if (!kept.has(slot)) this.clear(slot);
  }
}

/** The batch that stores a journaled commit in D1: the same statements whether sent first or again. */
export function journalStatements(db: D1Database, projectId: string, entry: JournalEntry): D1PreparedStatement[] {
  const bySeq = (first: number, last: number) => entry.rows.filter((r) => r.seq >= first && r.seq <= last);
  const keyed = entry.keyed.map((k) => ({ key: k.key, requestHash: k.requestHash, rows: bySeq(k.first, k.last) }));
  const arm = entry.arm ?? null;
  // A commit marks its arm in its own batch (model/periods.ts): reads may take the main tables for settled till
  // they are marked, and skip a growing period below its low mark.
  const lo = entry.rows.reduce((m, r) => (r.occurred_at < m ? r.occurred_at : m), entry.rows[0].occurred_at);
  const mark = arm === null ? db.prepare(MAIN_COMMIT_SQL).bind(projectId) : db.prepare(PERIOD_LOW_SQL).bind(projectId, arm, lo);
  return [...insertEventsStatements(armDb(db, arm), entry.rows, entry.named), mark, ...idempotencyStatements(db, projectId, keyed)];
}

/** Whether D1 holds the journal's commit: a batch is one transaction, so its first row says it for all of them. */
export async function journalLanded(db: D1Database, projectId: string, entry: JournalEntry): Promise<boolean> {
  const first = entry.rows[0];
  const found = await armDb(db, entry.arm ?? null)
    .prepare(`SELECT e.hash FROM ${rowsBySeq({ project: "?1", lo: "?2", hi: "?2", columns: "e.hash" })} e`)
    .bind(projectId, first.seq)
    .first<{ hash: string }>();
  return found?.hash === first.hash;
}

/**
 * At a start, a journaled commit whose outcome the stopped instance never
 * learned, and which the head's recovery did not find in D1: sent again.
 * "landed" when D1 holds it now (sent again, or the stopped instance's batch
 * got there first: then sending it again fails on its rows, and the look finds
 * them); "refused" when a worker gave up one of its appends first (then no
 * batch of it can land). Anything else (D1 unreachable) is thrown: the commit
 * is still journaled, and the next start tries again.
 */
export async function resendJournal(db: D1Database, projectId: string, entry: JournalEntry): Promise<"landed" | "refused"> {
  try {
    await db.batch(journalStatements(db, projectId, entry));
    return "landed";
  } catch (error) {
    if (isGivenUpRefusal(error)) return "refused";
    if (await journalLanded(db, projectId, entry)) return "landed";
    throw error;
  }
}
