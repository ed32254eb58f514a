import type { EventRow } from "../db/schema";
import { CSV_HEADER, eventCsvLine } from "./csv";
import type { Cursor } from "./cursor";
import { selectEvents, type Selection } from "./event-query";
import { toEvent } from "./event-shape";

/** Rows per D1 page and per staged object: bounded memory, and few enough queries for a million rows. */
export const EXPORT_BATCH = 2000;
/** Staged objects older than this are deleted by the daily cron. */
export const STAGED_TTL_MS = 24 * 60 * 60 * 1000;
const PREFIX = "exports/";

export interface ExportFormat {
  contentType: string;
  extension: string;
  head: string;
  line(row: EventRow, first: boolean): string;
  tail: string;
}

export const FORMATS: Record<"csv" | "json", ExportFormat> = {
  csv: { contentType: "text/csv; charset=utf-8", extension: "csv", head: CSV_HEADER, line: eventCsvLine, tail: "" },
  json: {
    contentType: "application/json; charset=utf-8",
    extension: "json",
    head: "[",
    line: (row, first) => (first ? "" : ",") + JSON.stringify(toEvent(row)),
    tail: "]",
  },
};

/** Project ids are `[A-Za-z0-9._-]`; encoding anyway keeps one project's prefix from covering another's. */
const projectPrefix = (projectId: string) => `${PREFIX}${encodeURIComponent(projectId)}/`;

export function stagedKey(projectId: string, exportId: string, n: number): string {
  return `${projectPrefix(projectId)}${exportId}/${String(n).padStart(6, "0")}`;
}

/**
 * The export as a pull stream: each pull takes the next keyset page from D1,
 * renders it, stages it as one R2 object and only then hands it to the
 * client. While a page is rendered, staged and sent, the following page is
 * already being read; nothing more is read until the client has taken the
 * previous batch, so memory holds a few batches whatever the export's size.
 * A failure mid-way errors the stream: the client sees a broken download,
 * never a file that silently ends early.
 */
export function exportStream(env: Env, projectId: string, sel: Selection | null, format: ExportFormat): ReadableStream<Uint8Array> {
  const exportId = crypto.randomUUID();
  const encoder = new TextEncoder();
  const read = async (cursor: Cursor | null): Promise<EventRow[]> => {
    if (!sel) return [];
    const statement = selectEvents(sel, { columns: "e.*", cursor, limit: EXPORT_BATCH });
    return (await env.DB.prepare(statement.sql).bind(...statement.params).all<EventRow>()).results;
  };
  // Rejections surface when the page is awaited; this only keeps an abandoned read from being "unhandled".
  const prefetch = (cursor: Cursor | null) => {
    const page = read(cursor);
    page.catch(() => {});
    return page;
  };
  let next = prefetch(null);
  let n = 0;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const rows = await next;
        const done = rows.length < EXPORT_BATCH;
        if (!done) next = prefetch({ occurredAt: rows[rows.length - 1].occurred_at, seq: rows[rows.length - 1].seq });
        let text = n === 0 ? format.head : "";
        rows.forEach((row, i) => {
          text += format.line(row, n === 0 && i === 0);
        });
        if (done) text += format.tail;
        const bytes = encoder.encode(text);
        await env.EXPORTS.put(stagedKey(projectId, exportId, n), bytes, { httpMetadata: { contentType: format.contentType } });
        n++;
        controller.enqueue(bytes);
        if (done) controller.close();
      },
    },
    { highWaterMark: 1 },
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
export function deleteExpiredExports(env: Env, now: Date): Promise<number> {
  const cutoff = now.getTime() - STAGED_TTL_MS;
  return deleteStaged(env.EXPORTS, PREFIX, (o) => o.uploaded.getTime() >= cutoff);
}

/** Every staged export object of one project, whatever its age (erasure calls this). */
export function deleteStagedExports(env: Env, projectId: string): Promise<number> {
  return deleteStaged(env.EXPORTS, projectPrefix(projectId), () => false);
}
