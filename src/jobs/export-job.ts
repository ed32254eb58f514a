import { selectEvents, type Selection } from "../reads/event-query";
import { narrowExclusions } from "../reads/event-read";
import { FORMATS } from "../reads/export-formats";
import { archivedThrough } from "../storage/archive-segments";
import { eventsDb } from "../storage/shards";
import { nextPart, type WalkState } from "./export-walk";
import { fileKey, partName, sha256Hex } from "./job-files";
import { getJob, recordPart, startJob } from "./job-store";

/**
 * An export job: a plan, then one step per part, each part one R2 object of at
 * most `part_rows` rows. The files are consecutive slices of one export:
 * concatenated in order they are byte for byte what GET /v1/exports returns
 * for the same filters (CSV: the header in the first file only; JSON: one
 * array, "[" opening the first file and "]" closing the last).
 */
export interface ExportParams {
  format: "csv" | "json";
  part_rows: number;
  /** The filters as resolved at POST; null when nothing can match (an empty export). */
  selection: Selection | null;
  filters: Record<string, unknown>;
}

/** Rows per part unless the job asks for fewer: ten D1 pages, a few MB, a step well inside every limit. */
export const PART_ROWS = 20_000;
export const MIN_PART_ROWS = 10;

/** The walk's start and the work's size. Total is exact without filters; with them it counts every archived row in the date window until the job ends. */
export async function planExport(env: Env, projectId: string, jobId: string): Promise<{ total: number }> {
  const job = await getJob(env, projectId, jobId);
  if (!job || (job.status !== "queued" && job.status !== "running")) return { total: 0 };
  // A job already started (this step retried, or the job resumed) keeps its state and parts: the record decides.
  if (job.status === "running") return { total: job.total };
  const params = job.params as unknown as ExportParams;
  const db = await eventsDb(env, projectId);
  const sel = params.selection;
  const base = await archivedThrough(db, projectId);
  const hot = sel ? await narrowExclusions(db, sel) : null;
  let total = 0;
  if (sel) {
    if (hot) {
      const count = selectEvents(hot, { columns: "e.seq", cursor: null, limit: -1 });
      total += (await db.prepare(`SELECT count(*) AS n FROM (${count.sql})`).bind(...count.params).first<{ n: number }>())!.n;
    }
    const archived = await db
      .prepare("SELECT coalesce(sum(count), 0) AS n FROM archive_segments WHERE project_id = ?1 AND (?2 IS NULL OR last_occurred_at >= ?2) AND (?3 IS NULL OR first_occurred_at <= ?3)")
      .bind(projectId, sel.dateFrom, sel.dateTo)
      .first<{ n: number }>();
    total += archived!.n;
  }
  const state: WalkState | null = sel ? { phase: "hot", sel, hot, cursor: null, base, marks: [], segBefore: null, skip: 0 } : null;
  await startJob(env, projectId, jobId, total, state ?? { phase: "done" });
  return { total };
}

/**
 * Writes the job's next part from the state its record holds, then records it.
 * Retried after a crash, it starts from the same record: the same object
 * name is written again with the same rows, and a part already recorded is
 * never recorded twice. `last`: the export is complete.
 */
export async function exportPart(env: Env, projectId: string, jobId: string): Promise<{ last: boolean; stopped: boolean }> {
  const job = await getJob(env, projectId, jobId);
  if (!job || job.status !== "running") return { last: true, stopped: true };
  const params = job.params as unknown as ExportParams;
  const format = FORMATS[params.format];
  const index = job.files.length;
  const state = job.state as WalkState;
  if (state.phase === "done" && index > 0) return { last: true, stopped: false };
  const db = await eventsDb(env, projectId);
  const part = state.phase === "done" ? { rows: [], state, last: true } : await nextPart(env, db, state, format.columns, params.part_rows);
  let text = index === 0 ? format.head : "";
  part.rows.forEach((row, i) => {
    text += format.line(row, job.done === 0 && i === 0);
  });
  if (part.last) text += format.tail;
  const done = job.done + part.rows.length;
  // Nothing to write: a stretch of archive without matches, or a CSV that ended exactly at the previous part.
  if (text === "") {
    await recordPart(env, projectId, jobId, index, null, done, part.state);
    return { last: part.last, stopped: false };
  }
  const bytes = new TextEncoder().encode(text);
  const name = partName(index, format.extension);
  const key = fileKey(projectId, jobId, name);
  await env.EXPORTS.put(key, bytes, { httpMetadata: { contentType: format.contentType } });
  const file = { name, bytes: bytes.length, rows: part.rows.length, sha256: await sha256Hex(bytes) };
  if (!(await recordPart(env, projectId, jobId, index, file, done, part.state))) {
    // Canceled meanwhile: its files were deleted, and this one must not outlive them.
    const now = await getJob(env, projectId, jobId);
    if (now?.status !== "running") await env.EXPORTS.delete(key);
    return { last: true, stopped: true };
  }
  return { last: part.last, stopped: false };
}
