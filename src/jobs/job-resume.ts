import { eventsDb, shardDb, shardNumbers } from "../storage/shards";
import { finishJob, getJob, idleJobs, neverFails, RETRYING, touchJob, type Job } from "./job-store";

/**
 * Resuming a job whose Workflow instance was lost: to a platform incident, or
 * to a restart of the local runtime (wrangler dev does not resume an instance
 * interrupted mid-step, and goes on calling it running). The record, not the
 * instance, holds the progress: the plan keeps a started job's state, each
 * part continues from the recorded state and is recorded once (by index), and
 * a verify chunk is counted once. So a lost instance is restarted (or created,
 * if it never was) and runs its steps again from the record.
 *
 * Lost is told from the record and the instance together. A running step
 * renews its record every HEARTBEAT_MS (keepAlive), and every step ends by
 * writing it, so a live job whose record has not moved for LOST_MS has no step
 * running: restarted unless its instance says it is paused (an operator's
 * doing). The minute also covers a POST whose create() is still under way, and
 * the engine's waits between a step's retries (at most 32 s). An instance that
 * errored or was terminated outside its steps fails its job at once, except an
 * erasure's, which is restarted: an erasure, once accepted, is applied to the
 * end. An erasure whose step failed all its retries (error JOB_RETRYING) waits
 * JOB_STALL_SECONDS before its next attempt, as does any live job whose record
 * stopped moving, whatever its instance says.
 */
export const DEFAULT_STALL_SECONDS = 1200;
export const HEARTBEAT_MS = 15_000;
export const LOST_MS = 60_000;

/** Jobs one cron run looks at per shard, longest idle first: each costs a few subrequests. */
const CRON_BATCH = 50;

/** Jobs one list page looks at: the page answers after their instances did. */
const LIST_BATCH = 10;

export function stallMs(env: Pick<Env, "JOB_STALL_SECONDS">): number {
  const seconds = Number(env.JOB_STALL_SECONDS);
  return (Number.isFinite(seconds) && seconds > 0 ? seconds : DEFAULT_STALL_SECONDS) * 1000;
}

/**
 * Runs a step's work while renewing its job's record, from its start and
 * every HEARTBEAT_MS: the sign that a step of the job is running. A renewal
 * that fails is only a missed sign; the work goes on.
 */
export async function keepAlive<T>(env: Env, projectId: string, jobId: string, work: () => Promise<T>): Promise<T> {
  const touch = () => touchJob(env, projectId, jobId).catch(() => {});
  let touching = touch();
  const timer = setInterval(() => void (touching = touch()), HEARTBEAT_MS);
  try {
    return await work();
  } finally {
    clearInterval(timer);
    // Inside the step's own invocation, not after it.
    await touching;
  }
}

type Seen = { instance: WorkflowInstance; status: InstanceStatus } | { instance: null };

async function inspect(env: Env, id: string): Promise<Seen> {
  try {
    const instance = await env.JOBS.get(id);
    return { instance, status: await instance.status() };
  } catch {
    // Not found (never created, or its runtime died before create() stored it), or not answering: either way nothing runs it.
    return { instance: null };
  }
}

/** What a live job's record and instance call for. */
function verdict(job: Job, seen: Seen, idleMs: number, stall: number): "fail" | "restart" | null {
  const held = idleMs >= stall;
  // An erasure that failed all its retries waits out the whole threshold: restarting it at once would only hit the same outage.
  const lost = idleMs >= LOST_MS && job.error?.code !== RETRYING;
  if (seen.instance === null) return held || lost ? "restart" : null;
  const { status } = seen.status;
  if (status === "errored" || status === "terminated") {
    // Ended outside its steps (a step failing all its retries records that itself).
    if (!neverFails(job.type)) return "fail";
    return held || lost ? "restart" : null;
  }
  // Paused on purpose by an operator, or rolling back: left alone.
  if (status === "paused" || status === "waitingForPause" || status === "rollingBack") return null;
  // Complete or unknown: it ended or was forgotten without finishing the record. Queued, running or waiting: no step renewed the record for a minute.
  return held || lost ? "restart" : null;
}

/**
 * Looks at a live job and acts on what it finds: fails it when its instance
 * ended outside its steps, restarts it when lost or stalled. The job as it is
 * after. Asks the instance only when that may change something: every read of
 * a job that fails on an ended instance, once the record is a minute idle for
 * the others. The record's updated_at is claimed before a restart (only if
 * unchanged since read), so two callers at once restart it once, and the next
 * restart waits until the record is idle again.
 */
export async function resumeIfLost(env: Env, job: Job, now = new Date()): Promise<Job> {
  if (job.status !== "queued" && job.status !== "running") return job;
  const idle = now.getTime() - Date.parse(job.updatedAt);
  if (neverFails(job.type) && idle < LOST_MS) return job;
  const seen = await inspect(env, job.id);
  const act = verdict(job, seen, idle, stallMs(env));
  if (act === "fail" && seen.instance) {
    const { status, error } = seen.status;
    await finishJob(env, job.projectId, job.id, {
      status: "failed",
      error: { code: "JOB_FAILED", message: `The job's workflow instance ${status}${error ? `: ${error.message}` : ""}` },
    });
    return (await getJob(env, job.projectId, job.id)) ?? job;
  }
  if (act !== "restart") return job;
  const db = await eventsDb(env, job.projectId);
  const claimed = await db
    .prepare("UPDATE jobs SET updated_at = ?1 WHERE project_id = ?2 AND id = ?3 AND updated_at = ?4 AND status IN ('queued', 'running')")
    .bind(now.toISOString(), job.projectId, job.id, job.updatedAt)
    .run();
  if (claimed.meta.changes !== 1) return (await getJob(env, job.projectId, job.id)) ?? job;
  try {
    if (seen.instance) await seen.instance.restart();
    else await env.JOBS.create({ id: job.id, params: { jobId: job.id, projectId: job.projectId, type: job.type } });
  } catch (error) {
    // The claim moved the record: the next GET or cron run a minute on tries again.
    console.warn(`job ${job.id}: resume: ${error instanceof Error ? error.message : error}`);
  }
  return (await getJob(env, job.projectId, job.id)) ?? job;
}

/** A list page's jobs, the lost ones among the first LIST_BATCH idle ones resumed (the rest on a later read or the cron). */
export async function resumeLostOnPage(env: Env, jobs: Job[], now = new Date()): Promise<Job[]> {
  const idle = jobs.filter((j) => (j.status === "queued" || j.status === "running") && now.getTime() - Date.parse(j.updatedAt) >= LOST_MS).slice(0, LIST_BATCH);
  if (idle.length === 0) return jobs;
  const after = new Map((await Promise.all(idle.map((j) => resumeIfLost(env, j, now)))).map((j) => [j.id, j]));
  return jobs.map((j) => after.get(j.id) ?? j);
}

/** The cron (every minute, and the daily run): every shard's lost or stalled jobs, a batch each; how many it failed or restarted. */
export async function resumeLostJobs(env: Env, now: Date): Promise<number> {
  let acted = 0;
  for (const shard of shardNumbers(env)) {
    for (const row of await idleJobs(shardDb(env, shard), new Date(now.getTime() - LOST_MS), CRON_BATCH)) {
      const job = await getJob(env, row.project_id, row.id);
      if (!job) continue;
      const after = await resumeIfLost(env, job, now);
      if (after.updatedAt !== job.updatedAt || after.status !== job.status) acted++;
    }
  }
  return acted;
}
