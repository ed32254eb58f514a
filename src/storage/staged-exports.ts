/**
 * Staged exports: the R2 objects GET /v1/exports streams through (src/reads/
 * export-part.ts writes them, one per batch). Only a transfer buffer: the
 * daily cron deletes any older than a day, and an erasure deletes a project's
 * at once, since they may hold the personal data it erases.
 */
/** Staged objects older than this are deleted by the daily cron. */
export const STAGED_TTL_MS = 24 * 60 * 60 * 1000;
const PREFIX = "exports/";

/** Project ids are `[A-Za-z0-9._-]`; encoding anyway keeps one project's prefix from covering another's. */
const projectPrefix = (projectId: string) => `${PREFIX}${encodeURIComponent(projectId)}/`;

export function stagedKey(projectId: string, exportId: string, n: number): string {
  return `${projectPrefix(projectId)}${exportId}/${String(n).padStart(6, "0")}`;
}

async function deleteStaged(bucket: R2Bucket, prefix: string, keep: (object: R2Object) => boolean): Promise<number> {
  let deleted = 0;
  let cursor: string | undefined;
  do {
    const page = await bucket.list({ prefix, cursor, limit: 1000 });
    const keys = page.objects.filter((o) => !keep(o)).map((o) => o.key);
    if (keys.length > 0) await bucket.delete(keys);
    deleted += keys.length;
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return deleted;
}

/** Daily cron: staged export objects are only a transfer buffer; none outlives a day. */
export function deleteExpiredExports(env: Pick<Env, "EXPORTS">, now: Date): Promise<number> {
  const cutoff = now.getTime() - STAGED_TTL_MS;
  return deleteStaged(env.EXPORTS, PREFIX, (o) => o.uploaded.getTime() >= cutoff);
}

/** Every staged export object of one project, whatever its age (erasure calls this). */
export function deleteStagedExports(env: Pick<Env, "EXPORTS">, projectId: string): Promise<number> {
  return deleteStaged(env.EXPORTS, projectPrefix(projectId), () => false);
}
