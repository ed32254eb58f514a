import type { AuditActor, AuditOrigin } from "./self-audit";

/** What identifies the person an erasure is about. */
export type ErasureBy = "id" | "email";

/** An erasure as asked for, before the ledger records it. */
export interface ErasureRequest {
  projectId: string;
  /** What identifies the person: actor.id, or actor.email for actors sent without an id. */
  by: ErasureBy;
  value: string;
  /** When set, only this tenant's events are scrubbed. */
  organization: string | null;
}

/**
 * Erasures accepted and not yet applied, kept in the ledger's own storage
 * with where their job stands. The clear value (actor id or e-mail) is needed
 * to find the rows, so it is kept here, inside the ledger only (never in D1,
 * the job's record or the Workflow's params), and deleted with the row when
 * the job ends. Every step reads and advances `state` here, so a step
 * repeated after a crash starts where the last one that finished left off.
 */
export type ErasurePhase = "hot" | "archive" | "settle" | "cleanup" | "done";

export interface ErasureState {
  phase: ErasurePhase;
  /** The archive walk goes on with the segment after this first_seq (0: from the start). */
  segmentAfter: number;
  /** Compaction of the search index finished (cleanup). */
  compacted: boolean;
}

export interface RunningErasure {
  erasure_id: number;
  job_id: string;
  by: ErasureBy;
  value: string;
  organization: string | null;
  subject_sha256: string;
  erased_at: string;
  /** The chain head when it was accepted: later events are not covered. */
  through_seq: number;
  /** Its staged self-audit event (AuditOutbox id), open until the job settles it. */
  outbox_id: number;
  audit: { by: AuditActor; origin: AuditOrigin };
  state: ErasureState;
}

type Stored = Omit<RunningErasure, "audit" | "state"> & { audit: string; state: string } & Record<string, SqlStorageValue>;

const revive = (r: Stored): RunningErasure => ({ ...r, audit: JSON.parse(r.audit), state: JSON.parse(r.state) });

export class RunningErasures {
  constructor(private readonly sql: SqlStorage) {
    sql.exec(
      "CREATE TABLE IF NOT EXISTS erasure_jobs (erasure_id INTEGER PRIMARY KEY, job_id TEXT NOT NULL, by TEXT NOT NULL, value TEXT NOT NULL, " +
        "organization TEXT, subject_sha256 TEXT NOT NULL, erased_at TEXT NOT NULL, through_seq INTEGER NOT NULL, outbox_id INTEGER NOT NULL, " +
        "audit TEXT NOT NULL, state TEXT NOT NULL)",
    );
  }

  /** Synchronous: joins the storage transaction of the erasure record it belongs to. */
  add(r: RunningErasure): void {
    this.sql.exec(
      "INSERT INTO erasure_jobs (erasure_id, job_id, by, value, organization, subject_sha256, erased_at, through_seq, outbox_id, audit, state) " +
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      r.erasure_id, r.job_id, r.by, r.value, r.organization, r.subject_sha256, r.erased_at, r.through_seq, r.outbox_id, JSON.stringify(r.audit), JSON.stringify(r.state),
    );
  }

  get(erasureId: number): RunningErasure | null {
    const row = this.sql.exec<Stored>("SELECT * FROM erasure_jobs WHERE erasure_id = ?", erasureId).toArray()[0];
    return row ? revive(row) : null;
  }

  list(): RunningErasure[] {
    return this.sql.exec<Stored>("SELECT * FROM erasure_jobs ORDER BY erasure_id").toArray().map(revive);
  }

  advance(erasureId: number, state: ErasureState): void {
    this.sql.exec("UPDATE erasure_jobs SET state = ? WHERE erasure_id = ?", JSON.stringify(state), erasureId);
  }

  /** The job ended: the clear value goes with the row. */
  remove(erasureId: number): void {
    this.sql.exec("DELETE FROM erasure_jobs WHERE erasure_id = ?", erasureId);
  }
}
