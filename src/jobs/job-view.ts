import type { Job } from "./job-store";

/** A job as the API shows it. */
export function jobView(job: Job) {
  const base = `/v1/jobs/${job.id}/files/`;
  return {
    id: job.id,
    type: job.type,
    status: job.status,
    progress: { done: job.done, total: job.total },
    created_at: job.createdAt,
    updated_at: job.updatedAt,
    created_by: job.createdBy?.key ?? null,
    created_by_scope: job.createdBy?.scope ?? null,
    ...(job.result !== null ? { result: job.result } : {}),
    ...(job.error ? { error: job.error } : {}),
    ...(job.type === "export"
      ? {
          files: job.filesExpired ? [] : job.files.map((f) => ({ ...f, url: base + f.name })),
          files_expire_at: job.filesExpireAt,
          files_expired: job.filesExpired,
        }
      : {}),
  };
}

/** The list cursor: the last job's (created_at, id). */
export function encodeJobCursor(job: Job): string {
  return btoa(JSON.stringify([job.createdAt, job.id])).replace(/=+$/, "");
}

export function decodeJobCursor(cursor: string): { createdAt: string; id: string } | null {
  try {
    const [createdAt, id] = JSON.parse(atob(cursor));
    return typeof createdAt === "string" && typeof id === "string" ? { createdAt, id } : null;
  } catch {
    return null;
  }
}
