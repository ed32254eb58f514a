import type { Cursor } from "./cursor";
import { selectEvents, type Selection } from "./event-query";
import { narrowExclusions } from "./event-read";
import type { ExportFormat } from "./export-formats";
import { exportPages } from "../storage/archive-export";
import type { CompanionFormat } from "../storage/archive-segments";

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

/** Batches read, rendered and staged ahead of the client: R2 puts overlap instead of queueing. */
const AHEAD = 3;

interface Staged {
  bytes: Uint8Array;
  last: boolean;
}

/**
 * The export as a pull stream. Each batch is one keyset page from D1 (or
 * archived rows), rendered and staged as one R2 object, or one archived
 * segment's pre-rendered companion; the client gets it once it is staged,
 * in order. Pages are read one after the other (each starts after
 * the previous one's last event) while up to AHEAD batches are rendered and
 * staged at once, and nothing more is read until the client takes a batch,
 * so memory holds a few batches whatever the export's size. A failure
 * mid-way errors the stream: the client sees a broken download, never a
 * file that silently ends early.
 */
export function exportStream(env: Env, db: D1Database, projectId: string, sel: Selection | null, format: ExportFormat): ReadableStream<Uint8Array> {
  const exportId = crypto.randomUUID();
  const encoder = new TextEncoder();
  const narrowed = sel ? narrowExclusions(db, sel) : Promise.resolve(null);
  narrowed.catch(() => {});
  const columns = format.columns.map((c) => `e.${c}`).join(", ");
  // The hot pages, then the archived events (src/storage/archive-export.ts); the archive is filtered by the selection as asked.
  const pages = (async function* () {
    const resolved = await narrowed;
    if (!sel) return;
    const read = async (cursor: Cursor | null): Promise<unknown[][]> => {
      // Null: no hot event can match (archived ones still may).
      if (!resolved) return [];
      const statement = selectEvents(resolved, { columns, cursor, limit: EXPORT_BATCH });
      return db.prepare(statement.sql).bind(...statement.params).raw();
    };
    yield* exportPages(db, env, sel, format.columns, read, EXPORT_BATCH, format.extension as CompanionFormat);
  })();
  // One page of lookahead: a batch is the last when no page follows it.
  let upcoming = pages.next();
  upcoming.catch(() => {});
  // Whether another batch follows; false once the last one was read. Failures surface when a batch is awaited.
  let position: Promise<boolean> = Promise.resolve(true);
  const stage = (n: number): Promise<Staged | null> => {
    const page = position.then(async (open) => {
      if (!open) return null;
      const current = await upcoming;
      if (current.done) return { rows: [] as unknown[][] | Uint8Array, last: true };
      upcoming = pages.next();
      upcoming.catch(() => {});
      return { rows: current.value, last: (await upcoming).done === true };
    });
    position = page.then((p) => p !== null && !p.last);
    const staged = page.then(async (p) => {
      if (!p) return null;
      const { rows, last } = p;
      if (rows instanceof Uint8Array) return { bytes: prerendered(rows, n === 0, last), last };
      let text = n === 0 ? format.head : "";
      rows.forEach((row, i) => {
        text += format.line(row, n === 0 && i === 0);
      });
      if (last) text += format.tail;
      const bytes = encoder.encode(text);
      await env.EXPORTS.put(stagedKey(projectId, exportId, n), bytes, { httpMetadata: { contentType: format.contentType } });
      return { bytes, last };
    });
    // A failure surfaces when its batch is awaited; batches never awaited must not count as unhandled.
    position.catch(() => {});
    staged.catch(() => {});
    return staged;
  };
  /**
   * A whole archived segment's export companion, already rendered (see
   * archive-companions.ts). It is not staged: it is itself an immutable R2
   * object, checked against its index row's SHA-256, and staging it would
   * only copy R2 into R2, the largest cost of an archived row.
   */
  const prerendered = (body: Uint8Array, opens: boolean, last: boolean): Uint8Array => {
    const before = encoder.encode(opens ? format.head : format.between);
    const after = encoder.encode(last ? format.tail : "");
    if (before.length === 0 && after.length === 0) return body;
    const out = new Uint8Array(before.length + body.length + after.length);
    out.set(before);
    out.set(body, before.length);
    out.set(after, before.length + body.length);
    return out;
  };
  const ahead: Array<Promise<Staged | null>> = [];
  let n = 0;
  let finished = false;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        while (!finished && ahead.length < AHEAD) ahead.push(stage(n++));
        const batch = await ahead.shift()!;
        if (batch) controller.enqueue(batch.bytes);
        if (!batch || batch.last) {
          finished = true;
          controller.close();
        }
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
