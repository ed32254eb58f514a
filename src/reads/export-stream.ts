import type { Selection } from "../model/event-query";
import type { ExportFormatName } from "../model/export-formats";
import type { ExportPartResult, ExportPartState } from "./export-part";

/** Rows per D1 page and per staged object: bounded memory, and few enough queries for a million rows. */
export const EXPORT_BATCH = 2000;
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
export function exportStream(env: Env, projectId: string, sel: Selection | null, format: ExportFormatName): ReadableStream<Uint8Array> {
  const call = (state: ExportPartState): Promise<ExportPartResult> => {
    const result = env.EXPORT_PART.get(env.EXPORT_PART.newUniqueId()).run(state) as unknown as Promise<ExportPartResult>;
    result.catch(() => {});
    return result;
  };
  const plan: ExportPartState = {
    exportId: crypto.randomUUID(),
    projectId,
    format,
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
