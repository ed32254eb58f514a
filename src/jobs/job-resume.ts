import { eventsDb, shardDb, shardNumbers } from "../storage/shards";
import { finishJob, getJob, neverFails, type Job } from "./job-store";

/**
 * Resuming a job whose Workflow instance stopped moving: one lost to a
 * platform incident, or to a restart of the local runtime (wrangler dev does
 * not resume an instance interrupted mid-step). A queued or running job whose
 * record has not changed for JOB_STALL_SECONDS is restarted from its first
 * step. That is safe because the record, not the instance, holds the
 * progress: the plan keeps a started job's state, each part continues from
 * the recorded state and is recorded once (by index), and a verify chunk is
 * counted once. Every step rewrites its record, so only a job whose steps
 * stopped looks stalled (a step runs at most its 15-minute timeout, far above
 * the parts' and chunks' few seconds). An erasure's job is never failed here:
 * its instance is restarted, however it ended, until the erasure is applied.
 */
export const DEFAULT_STALL_SECONDS = 1200;

/** Jobs one cron run resumes per shard: each costs a few subrequests. */
const CRON_BATCH = 20;

export function stallMs(env: Pick<Env, "JOB_STALL_SECONDS">): number {
  const seconds = Number(env.JOB_STALL_SECONDS);
  return (Number.isFinite(seconds) && seconds > 0 ? seconds : DEFAULT_STALL_SECONDS) * 1000;
}

/**
 * Resumes the job if it is stalled; the job as it is after. The record's
 * updated_at is claimed first (only if unchanged since read), so two callers
 * at once resume it once, and the next resume waits a whole threshold again.
 */
export async function resumeIfStalled(env: Env, job: Job, now = new Date()): Promise<Job> {
  if (job.status !== "queued" && job.status !== "running") return job;
  if (now.getTime() - Date.parse(job.updatedAt) < stallMs(env)) return job;
  const db = await eventsDb(env, job.projectId);
  const claimed = await db
    .prepare("UPDATE jobs SET updated_at = ?1 WHERE project_id = ?2 AND id = ?3 AND updated_at = ?4 AND status IN ('queued', 'running')")
    .bind(now.toISOString(), job.projectId, job.id, job.updatedAt)
    .run();
  if (claimed.meta.changes !== 1) return (await getJob(env, job.projectId, job.id)) ?? job;
  try {
    await restartInstance(env, job);
  } catch (error) {
    // The record says so; the next GET or cron run after the threshold tries again.
    console.warn(`job ${job.id}: resume: ${error instanceof Error ? error.message : error}`);
  }
  return (await getJob(env, job.projectId, job.id)) ?? job;
}

async function restartInstance(env: Env, job: Job): Promise<void> {
  let instance: WorkflowInstance;
  try {
    instance = await env.JOBS.get(job.id);
  } catch {
    // Never created (the runtime stopped before POST's create() ran): create it now, under the job's id.
    await env.JOBS.create({ id: job.id, params: { jobId: job.id, projectId: job.projectId, type: job.type } });
    return;
  }
  const { status, error } = await instance.status();
  if ((status === "errored" || status === "terminated") && !neverFails(job.type)) {
    // Ended outside its steps (a step failing all its retries records the failure itself): as GET /v1/jobs/:id says.
    const message = `The job's workflow instance ${status}${error ? `: ${error.message}` : ""}`;
    await finishJob(env, job.projectId, job.id, { status: "failed", error: { code: "JOB_FAILED", message } });
    return;
  }
  // Paused on purpose by an operator, or rolling back: left alone.
  if (status === "paused" || status === "waitingForPause" || status === "rollingBack") return;
  await instance.restart();
}

/** The daily cron: every shard's stalled jobs, a batch each. */
export async function resumeStalledJobs(env: Env, now: Date): Promise<number> {
  const cutoff = new Date(now.getTime() - stallMs(env)).toISOString();
  let resumed = 0;
  for (const shard of shardNumbers(env)) {
    const { results } = await shardDb(env, shard)
      .prepare("SELECT id, project_id FROM jobs WHERE status IN ('queued', 'running') AND updated_at < ? ORDER BY updated_at LIMIT ?")
      .bind(cutoff, CRON_BATCH)
      .all<{ id: string; project_id: string }>();
    for (const row of results) {
      const job = await getJob(env, row.project_id, row.id);
      if (job && (await resumeIfStalled(env, job, now)).updatedAt !== job.updatedAt) resumed++;
    }
  }
  return resumed;
}
