import { insertStatements } from "./shard-copy";

/**
 * What a project keeps on its shard besides its events: job records (exports,
 * verifies, erasures) and the erasures still being applied, which every read
 * of the project must see. Both are small and copied whole at the switch, under
 * the ledger's lock: a job step that writes its record through an isolate's
 * stale shard cache afterwards lands on the old copy, and the job's own checks
 * (a part is recorded once, at its index) make it redo that step on the new one.
 */
const JOB_COLUMNS = [
  "id", "project_id", "type", "status", "params", "progress_done", "progress_total", "state", "files",
  "result", "error", "created_at", "updated_at", "files_expire_at", "files_expired", "created_by", "created_by_scope",
] as const;
const PENDING_COLUMNS = ["project_id", "erasure_id", "by", "subject_sha256", "organization", "erased_at", "through_seq"] as const;

export async function copyRecords(from: D1Database, to: D1Database, projectId: string): Promise<{ jobs: number; pending: number }> {
  const [jobs, pending] = await from.batch([
    from.prepare(`SELECT ${JOB_COLUMNS.join(", ")} FROM jobs WHERE project_id = ?`).bind(projectId),
    from.prepare(`SELECT ${PENDING_COLUMNS.join(", ")} FROM pending_erasures WHERE project_id = ?`).bind(projectId),
  ]);
  const raw = (rows: unknown[], columns: readonly string[]) => (rows as Record<string, unknown>[]).map((r) => columns.map((c) => r[c]));
  await to.batch([
    to.prepare("DELETE FROM jobs WHERE project_id = ?").bind(projectId),
    ...insertStatements(to, "jobs", JOB_COLUMNS, raw(jobs.results, JOB_COLUMNS)),
    to.prepare("DELETE FROM pending_erasures WHERE project_id = ?").bind(projectId),
    ...insertStatements(to, "pending_erasures", PENDING_COLUMNS, raw(pending.results, PENDING_COLUMNS)),
  ]);
  return { jobs: jobs.results.length, pending: pending.results.length };
}

/** The old copy's records, once the drain is over; returns how many went. */
export async function deleteRecords(db: D1Database, projectId: string): Promise<number> {
  const [jobs, pending] = await db.batch([
    db.prepare("DELETE FROM jobs WHERE project_id = ?").bind(projectId),
    db.prepare("DELETE FROM pending_erasures WHERE project_id = ?").bind(projectId),
  ]);
  return jobs.meta.changes + pending.meta.changes;
}
