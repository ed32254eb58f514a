/**
 * src/jobs/: long work as durable jobs, one Workflow instance each
 * (src/durable/job-workflow.ts). Start here: the job record (this file) that
 * every step reads and advances; export-job.ts and export-walk.ts (exports,
 * evidence.ts for evidence exports), verify-job.ts, erasure-job.ts; job-resume.ts
 * restarts a lost or stalled one, job-owner.ts decides who may stop one,
 * job-archive.ts zips a finished export's files for one download.
 */
import type { JobRow } from "../db/schema";
import { eventsDb } from "../storage/shards";

/**
 * Job records, on the project's event shard (the job's record lives with the
 * project). Every write a step makes is guarded by the status it expects, so
 * a step of a canceled job, or one retried after it already recorded its
 * part, changes nothing.
 */
export type JobStatus = "queued" | "running" | "succeeded" | "failed" | "canceled";
/** erasure: made by DELETE /v1/actors/:id (src/jobs/erasure-job.ts), never by POST /v1/jobs. */
export type JobType = "export" | "verify" | "erasure";

export interface FilePart {
  name: string;
  bytes: number;
  rows: number;
  sha256: string;
}

/** Who created a job through POST /v1/jobs: the key's prefix, and the strongest scope it held (read or admin). */
export interface JobCreator {
  key: string;
  scope: "read" | "admin";
}

export interface Job {
  id: string;
  projectId: string;
  type: JobType;
  status: JobStatus;
  params: Record<string, unknown>;
  done: number;
  total: number;
  state: unknown;
  files: FilePart[];
  result: unknown;
  error: { code: string; message: string } | null;
  createdAt: string;
  updatedAt: string;
  filesExpireAt: string | null;
  filesExpired: boolean;
  /** Null for jobs made before creators were recorded (migration 0020) and for erasures' jobs. */
  createdBy: JobCreator | null;
}

/** An erasure, once accepted, is applied to the end: its job is resumed however its steps or instance end, never failed. */
export const neverFails = (type: JobType) => type === "erasure";

/** Why an erasure's job stays running after a step failed all its retries (noteStepFailure): it is resumed after JOB_STALL_SECONDS. */
export const RETRYING = "JOB_RETRYING";

/**
 * Queued or running. Written the same everywhere: the partial indexes of live
 * jobs (migration 0020) serve a query only if its WHERE repeats their term.
 */
const LIVE = "status IN ('queued', 'running')";

/** A finished job's files are kept this long, then the daily sweep deletes them. */
export const FILES_TTL_MS = 7 * 24 * 60 * 60 * 1000;

const parse = (text: string | null) => (text === null ? null : JSON.parse(text));

function jobOf(row: JobRow): Job {
  return {
    id: row.id,
    projectId: row.project_id,
    type: row.type as JobType,
    status: row.status as JobStatus,
    params: parse(row.params),
    done: row.progress_done,
    total: row.progress_total,
    state: parse(row.state),
    files: parse(row.files) ?? [],
    result: parse(row.result),
    error: parse(row.error),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    filesExpireAt: row.files_expire_at,
    filesExpired: row.files_expired === 1,
    createdBy:
      row.created_by !== null && (row.created_by_scope === "read" || row.created_by_scope === "admin") ? { key: row.created_by, scope: row.created_by_scope } : null,
  };
}

/** A job as it is, without a cap: for the tests and tools that set one up by hand. */
export async function insertJob(env: Env, projectId: string, id: string, type: JobType, params: Record<string, unknown>, creator: JobCreator | null = null): Promise<Job> {
  const db = await eventsDb(env, projectId);
  const now = new Date().toISOString();
  await db
    .prepare("INSERT INTO jobs (id, project_id, type, status, params, created_at, updated_at, created_by, created_by_scope) VALUES (?, ?, ?, 'queued', ?, ?, ?, ?, ?)")
    .bind(id, projectId, type, JSON.stringify(params), now, now, creator?.key ?? null, creator?.scope ?? null)
    .run();
  return (await getJob(env, projectId, id))!;
}

/** Live export and verify jobs a project may have by default (JOB_MAX_RUNNING). */
export const DEFAULT_MAX_RUNNING = 4;

export function maxRunning(env: Pick<Env, "JOB_MAX_RUNNING">): number {
  const n = Number(env.JOB_MAX_RUNNING);
  return Number.isInteger(n) && n >= 1 ? n : DEFAULT_MAX_RUNNING;
}

/**
 * What POST /v1/jobs gets: the new job; or, for a verify of a range a live
 * verify already covers, that job (joined); or no job, the project being at
 * its cap (running: how many live jobs it has).
 */
export interface Admission {
  job: Job | null;
  joined: boolean;
  running: number;
}

/**
 * Records a new export or verify job unless the project already has `max`
 * live ones (erasures' jobs are not counted: they are never refused) or, for
 * a verify, a live verify of the same params (window and since). The count,
 * the look for a twin and the insert are one statement, so concurrent POSTs
 * cannot all see room and together pass the cap: D1 runs a statement whole,
 * one at a time per database.
 */
export async function admitJob(
  env: Env,
  projectId: string,
  id: string,
  type: "export" | "verify",
  params: Record<string, unknown>,
  creator: JobCreator,
  max: number,
): Promise<Admission> {
  const db = await eventsDb(env, projectId);
  const text = JSON.stringify(params);
  const twin = `SELECT id FROM jobs WHERE project_id = ?2 AND ${LIVE} AND type = 'verify' AND ?3 = 'verify' AND params = ?4`;
  const live = `SELECT count(*) FROM jobs WHERE project_id = ?2 AND ${LIVE} AND type IN ('export', 'verify')`;
  // A job that ends between the refused insert and the look that says why leaves neither reason: try again.
  for (let attempt = 0; attempt < 3; attempt++) {
    const now = new Date().toISOString();
    const inserted = await db
      .prepare(
        "INSERT INTO jobs (id, project_id, type, status, params, created_at, updated_at, created_by, created_by_scope) " +
          `SELECT ?1, ?2, ?3, 'queued', ?4, ?5, ?5, ?6, ?7 WHERE NOT EXISTS (${twin}) AND (${live}) < ?8`,
      )
      .bind(id, projectId, type, text, now, creator.key, creator.scope, max)
      .run();
    if (inserted.meta.changes === 1) return { job: (await getJob(env, projectId, id))!, joined: false, running: 0 };
    const why = await db
      .prepare(`SELECT (${twin} ORDER BY created_at LIMIT 1) AS twin, (${live}) AS running`)
      .bind(null, projectId, type, text)
      .first<{ twin: string | null; running: number }>();
    const joined = why?.twin ? await getJob(env, projectId, why.twin) : null;
    if (joined) return { job: joined, joined: true, running: why!.running };
    if ((why?.running ?? max) >= max) return { job: null, joined: false, running: why?.running ?? max };
  }
  return { job: null, joined: false, running: max };
}

/** Null for an unknown id and for another project's job alike. */
export async function getJob(env: Env, projectId: string, id: string): Promise<Job | null> {
  const db = await eventsDb(env, projectId);
  const row = await db.prepare("SELECT * FROM jobs WHERE project_id = ? AND id = ?").bind(projectId, id).first<JobRow>();
  return row ? jobOf(row) : null;
}

/** Newest first; the cursor is the last job's (created_at, id). */
export async function listJobs(env: Env, projectId: string, after: { createdAt: string; id: string } | null, limit: number): Promise<Job[]> {
  const db = await eventsDb(env, projectId);
  const { results } = await db
    .prepare(
      "SELECT * FROM jobs WHERE project_id = ?1 AND (?2 IS NULL OR (created_at, id) < (?2, ?3)) ORDER BY created_at DESC, id DESC LIMIT ?4",
    )
    .bind(projectId, after?.createdAt ?? null, after?.id ?? "", limit)
    .all<JobRow>();
  return results.map(jobOf);
}

/**
 * queued -> running, with the work's size and the walk's start; false when the
 * job is no longer queued. Only from queued: a plan run again (a retried step,
 * a resumed job) must never reset the state and progress a job has recorded.
 */
export async function startJob(env: Env, projectId: string, id: string, total: number, state: unknown): Promise<boolean> {
  const db = await eventsDb(env, projectId);
  const res = await db
    .prepare("UPDATE jobs SET status = 'running', progress_total = ?, state = ?, updated_at = ? WHERE project_id = ? AND id = ? AND status = 'queued'")
    .bind(total, JSON.stringify(state), new Date().toISOString(), projectId, id)
    .run();
  return res.meta.changes === 1;
}

/**
 * Records one part and the walk's state after it, only if the job is running
 * and holds exactly `index` parts: a step retried after recording changes nothing.
 */
export async function recordPart(env: Env, projectId: string, id: string, index: number, part: FilePart | null, done: number, state: unknown): Promise<boolean> {
  const db = await eventsDb(env, projectId);
  const files = part ? "json_insert(files, '$[#]', json(?1))" : "files";
  const res = await db
    .prepare(
      `UPDATE jobs SET files = ${files}, progress_done = ?2, state = ?3, updated_at = ?4 ` +
        "WHERE project_id = ?5 AND id = ?6 AND status = 'running' AND json_array_length(files) = ?7",
    )
    .bind(part ? JSON.stringify(part) : null, done, JSON.stringify(state), new Date().toISOString(), projectId, id, index)
    .run();
  return res.meta.changes === 1;
}

/** running -> succeeded or failed; files expire FILES_TTL_MS after. */
export async function finishJob(
  env: Env,
  projectId: string,
  id: string,
  outcome: { status: "succeeded"; result?: unknown; total?: number } | { status: "failed"; error: { code: string; message: string } },
): Promise<boolean> {
  const db = await eventsDb(env, projectId);
  const now = new Date();
  const result = outcome.status === "succeeded" && outcome.result !== undefined ? JSON.stringify(outcome.result) : null;
  const error = outcome.status === "failed" ? JSON.stringify(outcome.error) : null;
  const total = outcome.status === "succeeded" ? (outcome.total ?? null) : null;
  const res = await db
    .prepare(
      "UPDATE jobs SET status = ?1, result = ?2, error = ?3, progress_total = coalesce(?4, progress_total), updated_at = ?5, files_expire_at = ?6 " +
        "WHERE project_id = ?7 AND id = ?8 AND status IN ('queued', 'running')",
    )
    .bind(outcome.status, result, error, total, now.toISOString(), new Date(now.getTime() + FILES_TTL_MS).toISOString(), projectId, id)
    .run();
  return res.meta.changes === 1;
}

/**
 * A step's sign of life (src/jobs/job-resume.ts keepAlive): a live job whose
 * record has not moved for a minute has no step running.
 */
export async function touchJob(env: Env, projectId: string, id: string): Promise<void> {
  const db = await eventsDb(env, projectId);
  await db.prepare(`UPDATE jobs SET updated_at = ? WHERE project_id = ? AND id = ? AND ${LIVE}`).bind(new Date().toISOString(), projectId, id).run();
}

/** Live jobs on one shard whose record has not moved since `before`, longest idle first. */
export async function idleJobs(db: D1Database, before: Date, limit: number): Promise<Array<{ id: string; project_id: string }>> {
  const { results } = await db
    .prepare(`SELECT id, project_id FROM jobs WHERE ${LIVE} AND updated_at < ? ORDER BY updated_at LIMIT ?`)
    .bind(before.toISOString(), limit)
    .all<{ id: string; project_id: string }>();
  return results;
}

/**
 * An erasure job whose step failed all its retries stays running: an erasure,
 * once accepted, must be applied to the end. The record says why its last
 * attempt stopped, and (untouched from now on) looks stalled after
 * JOB_STALL_SECONDS, when job-resume.ts restarts it from the ledger's progress.
 */
export async function noteStepFailure(env: Env, projectId: string, id: string, error: { code: string; message: string }): Promise<void> {
  const db = await eventsDb(env, projectId);
  await db
    .prepare("UPDATE jobs SET error = ?, updated_at = ? WHERE project_id = ? AND id = ? AND status IN ('queued', 'running')")
    .bind(JSON.stringify(error), new Date().toISOString(), projectId, id)
    .run();
}

/** Cancels a queued or running job; a finished one keeps its status. Its files are deleted by the caller either way. */
export async function cancelJob(env: Env, projectId: string, id: string): Promise<void> {
  const db = await eventsDb(env, projectId);
  const now = new Date().toISOString();
  await db.batch([
    db
      .prepare("UPDATE jobs SET status = 'canceled', error = ?, updated_at = ? WHERE project_id = ? AND id = ? AND status IN ('queued', 'running')")
      .bind(JSON.stringify({ code: "CANCELED", message: "Canceled by DELETE /v1/jobs/:id" }), now, projectId, id),
    db.prepare("UPDATE jobs SET files_expired = 1, updated_at = ? WHERE project_id = ? AND id = ?").bind(now, projectId, id),
  ]);
}

/** Finished jobs whose files are past their expiry on one shard, at most `limit`. */
export async function expiredJobs(db: D1Database, now: Date, limit: number): Promise<Array<{ id: string; project_id: string }>> {
  const { results } = await db
    .prepare("SELECT id, project_id FROM jobs WHERE files_expired = 0 AND files_expire_at IS NOT NULL AND files_expire_at <= ? LIMIT ?")
    .bind(now.toISOString(), limit)
    .all<{ id: string; project_id: string }>();
  return results;
}

export async function markFilesExpired(db: D1Database, projectId: string, id: string): Promise<void> {
  await db.prepare("UPDATE jobs SET files_expired = 1, updated_at = ? WHERE project_id = ? AND id = ?").bind(new Date().toISOString(), projectId, id).run();
}

/**
 * A verify job's chunk `index` counted as checked, once: the job's state lists
 * the chunks counted, so a retried or parallel step never counts one twice.
 */
export async function countChunk(env: Env, projectId: string, id: string, index: number): Promise<void> {
  const db = await eventsDb(env, projectId);
  await db
    .prepare(
      "UPDATE jobs SET progress_done = progress_done + 1, state = json_insert(coalesce(state, '[]'), '$[#]', ?1), updated_at = ?2 " +
        "WHERE project_id = ?3 AND id = ?4 AND status = 'running' AND NOT EXISTS (SELECT 1 FROM json_each(coalesce(jobs.state, '[]')) WHERE value = ?1)",
    )
    .bind(index, new Date().toISOString(), projectId, id)
    .run();
}
