import type { Selection } from "../model/event-query";
import { hotCount, narrowOverArms } from "../reads/export-part";
import { exportFormat, FORMATS, type ExportFormatName } from "../model/export-formats";
import { catalogFor } from "../catalog/catalog-cache";
import { archivedThrough } from "../storage/archive-segments";
import { eventsReadDb, projectRowKey } from "../storage/shards";
import { EvidenceRefused, evidenceManifest, evidencePart, MANIFEST_NAME, pinAnchor, withSalt, type EvidenceAnchor } from "./evidence";
import { nextPart, type WalkState } from "./export-walk";
import { fileKey, partName, sha256Hex } from "./job-files";
import { finishJob, getJob, recordPart, startJob } from "./job-store";

/**
 * An export job: a plan, then one step per part, each part one R2 object of at
 * most `part_rows` rows. The files are consecutive slices of one export:
 * concatenated in order they are byte for byte what GET /v1/exports returns
 * for the same filters (CSV: the header in the first file only; JSON: one
 * array, "[" opening the first file and "]" closing the last).
 */
export interface ExportParams {
  format: ExportFormatName;
  part_rows: number;
  /** The filters as resolved at POST; null when nothing can match (an empty export). */
  selection: Selection | null;
  filters: Record<string, unknown>;
  /** An evidence export (src/jobs/evidence.ts); absent on jobs made before they existed. */
  evidence?: boolean;
}

/** The walk's state, and for evidence exports the tree pinned at the plan. */
type PartState = (WalkState | { phase: "done" }) & { anchor?: EvidenceAnchor };

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
  const db = await eventsReadDb(env, projectId);
  const sel = params.selection;
  const base = await archivedThrough(db, projectId);
  const hot = sel ? await narrowOverArms(env, db, sel) : null;
  let total = 0;
  if (sel) {
    if (hot) total += await hotCount(env, db, hot, await projectRowKey(env, projectId));
    const archived = await db
      .prepare("SELECT coalesce(sum(count), 0) AS n FROM archive_segments WHERE project_id = ?1 AND (?2 IS NULL OR last_occurred_at >= ?2) AND (?3 IS NULL OR first_occurred_at <= ?3)")
      .bind(projectId, sel.dateFrom, sel.dateTo)
      .first<{ n: number }>();
    total += archived!.n;
  }
  const walk: WalkState | null = sel ? { phase: "hot", sel, hot, cursor: null, base, marks: [], segBefore: null, skip: 0 } : null;
  const state: PartState = { ...(walk ?? { phase: "done" }), ...(params.evidence ? { anchor: await pinAnchor(env, projectId) } : {}) };
  await startJob(env, projectId, jobId, total, state);
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
  const catalog = params.format === "ocsf" ? await catalogFor(env, projectId) : null;
  const format = exportFormat(params.format, catalog?.ocsfView());
  const index = job.files.length;
  const state = job.state as PartState;
  const anchor = params.evidence ? state.anchor : undefined;
  if (state.phase === "done" && index > 0) return { last: true, stopped: false };
  const db = await eventsReadDb(env, projectId);
  // Evidence rows carry pii_salt too, read as one more column after the shape's.
  const columns = anchor ? [...format.columns, "pii_salt" as const] : format.columns;
  const part = state.phase === "done" ? { rows: [], state, last: true } : await nextPart(env, db, state as WalkState, columns, params.part_rows);
  const done = job.done + part.rows.length;
  const text = anchor ? await evidenceText(env, projectId, anchor, format, part.rows) : plainText(format, part, index === 0, job.done === 0);
  const next: PartState = anchor ? { ...part.state, anchor } : part.state;
  // Nothing to write: a stretch of archive without matches, or a CSV that ended exactly at the previous part.
  if (text === "") {
    await recordPart(env, projectId, jobId, index, null, done, next);
    return { last: part.last, stopped: false };
  }
  const bytes = new TextEncoder().encode(text);
  const name = partName(index, format.extension);
  const key = fileKey(projectId, jobId, name);
  await env.EXPORTS.put(key, bytes, { httpMetadata: { contentType: format.contentType } });
  const file = { name, bytes: bytes.length, rows: part.rows.length, sha256: await sha256Hex(bytes) };
  if (!(await recordPart(env, projectId, jobId, index, file, done, next))) {
    // Canceled meanwhile: its files were deleted, and this one must not outlive them.
    const now = await getJob(env, projectId, jobId);
    if (now?.status !== "running") await env.EXPORTS.delete(key);
    return { last: true, stopped: true };
  }
  return { last: part.last, stopped: false };
}

function plainText(format: (typeof FORMATS)["csv"], part: { rows: unknown[][]; last: boolean }, opens: boolean, firstRow: boolean): string {
  let text = opens ? format.head : "";
  part.rows.forEach((row, i) => {
    text += format.line(row, firstRow && i === 0);
  });
  return part.last ? text + format.tail : text;
}

/**
 * An evidence part: only rows inside the pinned tree (ingest goes on while the
 * job runs, and newer rows have no leaf in it yet); "" when none are left.
 */
async function evidenceText(env: Env, projectId: string, anchor: EvidenceAnchor, format: (typeof FORMATS)["json"], rows: unknown[][]): Promise<string> {
  const seqAt = format.columns.indexOf("seq");
  const saltAt = format.columns.length;
  const inTree = rows.filter((r) => (r[seqAt] as number) <= anchor.size);
  if (inTree.length === 0) return "";
  const lines = inTree.map((r) => withSalt(format.line(r.slice(0, saltAt), true), r[saltAt]));
  return evidencePart(env, projectId, anchor, lines, inTree.map((r) => r[seqAt] as number));
}

/**
 * Steps an export's parts take at most: one part a step would make a 1B-event
 * export 50,000 steps, past the 10,000 a Workflow instance runs by default.
 * Past MAX_PART_STEPS parts, a step writes several, each recorded as it is
 * written (a step retried after a crash goes on from the last recorded part):
 * 10 a step at 1B, about 250 D1 queries and a few seconds of CPU.
 */
export const MAX_PART_STEPS = 5_000;

export async function exportParts(env: Env, projectId: string, jobId: string): Promise<{ last: boolean; stopped: boolean }> {
  const job = await getJob(env, projectId, jobId);
  if (!job || job.status !== "running") return { last: true, stopped: true };
  const rows = (job.params as unknown as ExportParams).part_rows;
  const perStep = Math.max(1, Math.ceil(job.total / rows / MAX_PART_STEPS));
  let part = { last: false, stopped: false };
  for (let i = 0; i < perStep && !part.last && !part.stopped; i++) part = await exportPart(env, projectId, jobId);
  return part;
}

/** The last step of an evidence export: manifest.json, recorded as the last file (rows 0). Repeated, it writes the same. */
export async function writeManifest(env: Env, projectId: string, jobId: string): Promise<{ stopped: boolean }> {
  const job = await getJob(env, projectId, jobId);
  if (!job || job.status !== "running") return { stopped: true };
  const params = job.params as unknown as ExportParams;
  const state = job.state as PartState;
  if (!params.evidence || !state.anchor || job.files.some((f) => f.name === MANIFEST_NAME)) return { stopped: false };
  const db = await eventsReadDb(env, projectId);
  let manifest: string;
  try {
    manifest = await evidenceManifest(env, db, job, state.anchor, params.filters);
  } catch (error) {
    // Refused, not failed: retrying cannot make D1's records true, so the job ends now and says why.
    if (!(error instanceof EvidenceRefused)) throw error;
    await finishJob(env, projectId, jobId, { status: "failed", error: { code: "EVIDENCE_REFUSED", message: error.message } });
    return { stopped: true };
  }
  const bytes = new TextEncoder().encode(manifest);
  await env.EXPORTS.put(fileKey(projectId, jobId, MANIFEST_NAME), bytes, { httpMetadata: { contentType: "application/json; charset=utf-8" } });
  const file = { name: MANIFEST_NAME, bytes: bytes.length, rows: 0, sha256: await sha256Hex(bytes) };
  return { stopped: !(await recordPart(env, projectId, jobId, job.files.length, file, job.done, state)) };
}
