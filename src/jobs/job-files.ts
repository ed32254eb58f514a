import { shardDb, shardNumbers } from "../storage/shards";
import { expiredJobs, markFilesExpired } from "./job-store";

/**
 * A job's files in the EXPORTS bucket, under jobs/<project>/<job id>/. Outside
 * the exports/ prefix on purpose: the daily sweep of staged exports deletes
 * everything there older than a day, and a job's files are kept 7 days.
 */
const PREFIX = "jobs/";

export function jobPrefix(projectId: string, jobId: string): string {
  return `${PREFIX}${encodeURIComponent(projectId)}/${jobId}/`;
}

export function fileKey(projectId: string, jobId: string, name: string): string {
  return jobPrefix(projectId, jobId) + name;
}

/** part-000001.csv, ...: names sort in the files' order. */
export function partName(index: number, extension: string): string {
  return `part-${String(index + 1).padStart(6, "0")}.${extension}`;
}

export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Every file of one job, in pages of 1,000 keys (R2's list and delete limit). */
export function deleteJobFiles(env: Pick<Env, "EXPORTS">, projectId: string, jobId: string): Promise<number> {
  return deletePrefix(env, jobPrefix(projectId, jobId));
}

/**
 * Erasure: a job's files may hold the erased person's data in clear, so every
 * job file of the project goes at once (not after 7 days) and its jobs say
 * their files expired. A part a running export job writes afterwards reads
 * the scrubbed rows.
 */
export async function deleteProjectJobFiles(env: Pick<Env, "EXPORTS">, db: D1Database, projectId: string): Promise<number> {
  const deleted = await deletePrefix(env, `${PREFIX}${encodeURIComponent(projectId)}/`);
  await db.prepare("UPDATE jobs SET files_expired = 1, updated_at = ? WHERE project_id = ? AND files_expired = 0").bind(new Date().toISOString(), projectId).run();
  return deleted;
}

async function deletePrefix(env: Pick<Env, "EXPORTS">, prefix: string): Promise<number> {
  let deleted = 0;
  let cursor: string | undefined;
  do {
    const page = await env.EXPORTS.list({ prefix, cursor, limit: 1000 });
    const keys = page.objects.map((o) => o.key);
    if (keys.length > 0) await env.EXPORTS.delete(keys);
    deleted += keys.length;
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return deleted;
}

/** Jobs per shard one sweep handles: 3 subrequests each (list, delete, mark), well under a cron run's budget. */
const SWEEP_LIMIT = 500;

/** Daily cron: finished jobs' files past their expiry (7 days) are deleted and the jobs say so. */
export async function sweepExpiredJobFiles(env: Env, now: Date): Promise<number> {
  let swept = 0;
  for (const shard of shardNumbers(env)) {
    const db = shardDb(env, shard);
    for (const job of await expiredJobs(db, now, SWEEP_LIMIT)) {
      await deleteJobFiles(env, job.project_id, job.id);
      await markFilesExpired(db, job.project_id, job.id);
      swept++;
    }
  }
  return swept;
}
