import type { Selection } from "../model/event-query";
import type { ExportFormat } from "../model/export-formats";
import type { ExportPartResult, ExportPartState } from "./export-part";

/** Rows per D1 page and per staged object: bounded memory, and few enough queries for a million rows. */
export const EXPORT_BATCH = 2000;
/** Staged objects older than this are deleted by the daily cron. */
export const STAGED_TTL_MS = 24 * 60 * 60 * 1000;
const PREFIX = "exports/";

/** Project ids are `[A-Za-z0-9._-]`; encoding anyway keeps one project's prefix from covering another's. */
const projectPrefix = (projectId: string) => `${PREFIX}${encodeURIComponent(projectId)}/`;

export function stagedKey(projectId: string, exportId: string, n: number): string {
  return `${projectPrefix(projectId)}${exportId}/${String(n).padStart(6, "0")}`;
}

/** Batches per part (ten D1 pages: well inside an invocation's limits and an RPC's 32 MiB); tests make both small. */
export const exportTuning = { batch: EXPORT_BATCH, pages: 10 };

/**
 * The export as a pull stream, one part at a time (src/reads/export-part.ts):
 * each part is read, rendered and staged in its own ExportPart object, a
 * fresh one per call, so no invocation's D1 queries or subrequests grow with
 * the export; this request only makes one call per part. While the client
 * takes a part, the next one is under way, and nothing more: memory holds
 * two parts whatever the export's size. A failure mid-way errors the stream:
 * the client sees a broken download, never a file that silently ends early.
 */
export function exportStream(env: Env, projectId: string, sel: Selection | null, format: ExportFormat): ReadableStream<Uint8Array> {
  const call = (state: ExportPartState): Promise<ExportPartResult> => {
    const result = env.EXPORT_PART.get(env.EXPORT_PART.newUniqueId()).run(state) as unknown as Promise<ExportPartResult>;
    result.catch(() => {});
    return result;
  };
  const plan: ExportPartState = {
    exportId: crypto.randomUUID(),
    projectId,
    format: format.extension as "csv" | "json",
    phase: "plan",
    sel,
    hot: null,
    cursor: null,
    base: 0,
    marks: [],
    segBefore: null,
    skip: 0,
    n: 0,
    lastStaged: null,
    ...exportTuning,
  };
  let next: Promise<ExportPartResult> | null = call(plan);
  const queue: Uint8Array[] = [];
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        while (queue.length === 0 && next) {
          const part = await next;
          next = part.last ? null : call(part.state);
          queue.push(...part.chunks);
        }
        const chunk = queue.shift();
        if (chunk) controller.enqueue(chunk);
        if (queue.length === 0 && !next) controller.close();
      },
    },
    { highWaterMark: 0 },
  );
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
