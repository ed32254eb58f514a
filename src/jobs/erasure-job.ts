import { ledgerOf } from "../chain/ledger";
import type { RunningErasure } from "../chain/erasure-running";
import { pendingInsert } from "../model/pending-erasures";
import { eventsDb } from "../storage/shards";
import { finishJob, getJob, startJob } from "./job-store";

/**
 * The job of an erasure (DELETE /v1/actors/:id): made by the project's
 * ledger when it accepts the erasure, never through POST /v1/jobs, and shown
 * by GET /v1/jobs/:id like any job. Each Workflow step is one call of the
 * ledger's erasureStep (src/chain/erasure-steps.ts), which keeps the
 * progress; this record mirrors it: progress.done counts the events
 * anonymized so far (total is only known at the end), result is
 * {erasure_id, anonymized}. Its params name the erasure, never the person.
 */
export interface ErasureJobParams {
  erasure_id: number;
  by: "id" | "email";
  organization: string | null;
}

/**
 * In one D1 batch, idempotent (a ledger resumed after a crash repeats it):
 * the pending entry every read applies from now on, the job's record, and
 * the project's earlier export job files withdrawn (they may hold the erased
 * values; the job's last step deletes them).
 */
export async function ensureErasureJob(db: D1Database, projectId: string, r: RunningErasure): Promise<void> {
  const now = new Date().toISOString();
  const params: ErasureJobParams = { erasure_id: r.erasure_id, by: r.by, organization: r.organization };
  await db.batch([
    pendingInsert(db, projectId, r),
    db
      .prepare("INSERT OR IGNORE INTO jobs (id, project_id, type, status, params, created_at, updated_at) VALUES (?, ?, 'erasure', 'queued', ?, ?, ?)")
      .bind(r.job_id, projectId, JSON.stringify(params), r.erased_at, now),
    db.prepare("UPDATE jobs SET files_expired = 1, updated_at = ? WHERE project_id = ? AND type = 'export' AND files_expired = 0").bind(now, projectId),
  ]);
}

/** Starts the job's Workflow instance (the route does, not waiting for it); a job never started is resumed by job-resume.ts. */
export function startErasureJob(env: Env, projectId: string, jobId: string): Promise<unknown> {
  return env.JOBS.create({ id: jobId, params: { jobId, projectId, type: "erasure" } });
}

/** One step; done once the erasure is applied (the job then succeeded) or the job is no longer running. */
export async function erasureJobStep(env: Env, projectId: string, jobId: string): Promise<{ done: boolean }> {
  const job = await getJob(env, projectId, jobId);
  if (!job || (job.status !== "queued" && job.status !== "running")) return { done: true };
  if (job.status === "queued") await startJob(env, projectId, jobId, 0, null);
  const { erasure_id } = job.params as unknown as ErasureJobParams;
  const step = await ledgerOf(env, projectId).erasureStep(erasure_id);
  const db = await eventsDb(env, projectId);
  await db
    // state keeps the longest the ledger's commit lock was held by any step (for operators and the benches); a step that went through clears an earlier attempt's error.
    .prepare(
      "UPDATE jobs SET progress_done = ?, updated_at = ?, error = NULL, state = json_object('lock_ms_max', max(coalesce(state ->> '$.lock_ms_max', 0), ?)) " +
        "WHERE project_id = ? AND id = ? AND status = 'running'",
    )
    .bind(step.anonymized, new Date().toISOString(), step.lockMs, projectId, jobId)
    .run();
  if (!step.done) return { done: false };
  await finishJob(env, projectId, jobId, { status: "succeeded", result: { erasure_id, anonymized: step.anonymized }, total: step.anonymized });
  return { done: true };
}
