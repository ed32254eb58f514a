import type { EventRow } from "../db/schema";
import type { NamedAppend } from "../model/commit-spans";
import { rowsBySeq } from "../model/row-keys";
import type { Head } from "./chain-check";
import { insertEventsStatements } from "./event-insert";
import { isGivenUpRefusal } from "./landed-appends";
import { idempotencyStatements } from "./seal-events";

/**
 * The commit the ledger is writing to D1, kept in the ledger's own SQLite
 * from before its D1 batch is sent (issue 38, item 3, step 1). A commit is
 * durable once its journal is: if the runtime stops the ledger anywhere after
 * that, the next instance sends the same batch again at its start, or finds
 * that D1 already has it (resendJournal), instead of losing it.
 *
 * Only the newest commit is kept, and it is never deleted: the next commit
 * writes over it, and a journal whose commit is at or below the head is done.
 * So a commit costs one Durable Object row (a part per 512 Ki characters of
 * rows), whatever becomes of it, and no delete.
 *
 * D1 is still where the answer waits (chain/group-commit.ts answers after the
 * batch) and where a lost answer is looked for (chain/landed-appends.ts). Its
 * given-up names keep both sound with the journal: a batch sent again after
 * its worker gave an append of it up is refused whole, so it lands before
 * the worker's look or never (the design of the steps after this one:
 * test/bench/README.md, "A journal in the ledger's own SQLite").
 */
export interface JournalEntry {
  /** The head the commit follows. */
  after: Head;
  rows: EventRow[];
  named: NamedAppend[];
  /** Appends under an Idempotency-Key, by the seqs of their rows. */
  keyed: Array<{ key: string; requestHash: string | null; first: number; last: number }>;
}

/** Characters a part holds: well under a Durable Object row's 2 MB in UTF-8 (3 bytes at most a character here). */
const PART_CHARS = 512 * 1024;

export class CommitJournal {
  constructor(private readonly sql: SqlStorage) {
    sql.exec("CREATE TABLE IF NOT EXISTS commit_journal (part INTEGER PRIMARY KEY, parts INTEGER NOT NULL, body TEXT NOT NULL)");
  }

  /** Keeps `entry` as the commit in flight. Synchronous: it is in the storage transaction of the code that calls it. */
  write(entry: JournalEntry): void {
    const text = JSON.stringify(entry);
    const parts = Math.max(1, Math.ceil(text.length / PART_CHARS));
    for (let i = 0; i < parts; i++) {
      this.sql.exec("INSERT OR REPLACE INTO commit_journal (part, parts, body) VALUES (?, ?, ?)", i, parts, text.slice(i * PART_CHARS, (i + 1) * PART_CHARS));
    }
    // A larger commit's parts past this one's: only when there are some (a delete that finds none writes nothing).
    this.sql.exec("DELETE FROM commit_journal WHERE part >= ?", parts);
  }

  /** The journal's commit when it follows `head`: written, and its outcome not known to this instance. Null otherwise. */
  after(head: Head): JournalEntry | null {
    const rows = this.sql.exec<{ parts: number; body: string }>("SELECT parts, body FROM commit_journal ORDER BY part").toArray();
    if (rows.length === 0 || rows.length !== rows[0].parts) return null;
    const entry = JSON.parse(rows.map((r) => r.body).join("")) as JournalEntry;
    return entry.after.seq === head.seq && entry.after.hash === head.hash ? entry : null;
  }

  /** Forgets the commit: D1 refused it, or the ledger answered it as not stored, so it must never be sent again. */
  clear(): void {
    this.sql.exec("DELETE FROM commit_journal");
  }

  /**
   * Forgets a commit that is done (at or below `head`), under the commit
   * lock: its rows carry personal data, which an erasure must not leave
   * behind here. A commit still to be sent again is kept.
   */
  dropDone(head: Head): void {
    if (this.after(head) === null) this.clear();
  }
}

/** The batch that stores a journaled commit in D1: the same statements whether sent first or again. */
export function journalStatements(db: D1Database, projectId: string, entry: JournalEntry): D1PreparedStatement[] {
  const bySeq = (first: number, last: number) => entry.rows.filter((r) => r.seq >= first && r.seq <= last);
  const keyed = entry.keyed.map((k) => ({ key: k.key, requestHash: k.requestHash, rows: bySeq(k.first, k.last) }));
  return [...insertEventsStatements(db, entry.rows, entry.named), ...idempotencyStatements(db, projectId, keyed)];
}

/** Whether D1 holds the journal's commit: a batch is one transaction, so its first row says it for all of them. */
async function journalLanded(db: D1Database, projectId: string, entry: JournalEntry): Promise<boolean> {
  const first = entry.rows[0];
  const found = await db
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
