import { createRoute, z } from "@hono/zod-openapi";
import { COSTS } from "../auth/rate-cost";
import { selectionFor } from "../model/event-query";
import { parseRange } from "../jobs/byte-range";
import { PART_ROWS } from "../jobs/export-job";
import { archiveOrder, archiveRefusal, archiveStream, missingFiles } from "../jobs/job-archive";
import { deleteJobFiles, fileKey } from "../jobs/job-files";
import { creatorOf, recordJobStop, stopKind, stopRefusal } from "../jobs/job-owner";
import { admitJob, cancelJob, DEFAULT_MAX_RUNNING, finishJob, getJob, listJobs, maxRunning } from "../jobs/job-store";
import { resumeIfLost, resumeLostOnPage } from "../jobs/job-resume";
import { decodeJobCursor, encodeJobCursor, jobView } from "../jobs/job-view";
import { ApiError } from "../lib/errors";
import { AUTH_ERRORS, documented, errors, json, router } from "../middleware/openapi";
import { readJsonObject } from "../lib/request-body";
import { toIssues, validate, validationError } from "../lib/validate";
import { access, apiKeyOf, auditActor, projectOf } from "../middleware/credential";
import { requestContext } from "../middleware/ingest";
import { metadataFields, withMetadata } from "../middleware/metadata-filters";
import { createJobSchema, exportJobSchema, jobEnvelopeSchema, jobListQuery, jobPageSchema, verifyJobSchema } from "../schemas/jobs";

/**
 * Exports and verifies as durable jobs (Cloudflare Workflows, src/jobs/):
 * for clients that cannot hold one connection for a whole project. Read
 * scope to start and read them, as for GET /v1/exports and /v1/events/verify;
 * stopping one needs the scope of the key that started it (src/jobs/job-owner.ts).
 */
const jobs = router();
const READ = access("read");
const idParam = z.object({ id: z.string() });

/** Retry-After of a POST refused at the cap: when a running job ends is not known, so a guess that does not hammer. */
const FULL_RETRY_S = 30;

/** Routes behind READ.guard: an API key, never an embed token. */
const KEY_NEEDED = "Jobs need an API key";

documented(jobs, createRoute({
  method: "post", path: "/", tags: ["Jobs"], operationId: "createJob", summary: "Start an export or verify job", security: READ.security,
  description:
    `A job reads the whole project (in its filters or window), as GET /v1/exports and /v1/events/verify do, and costs as much of the rate limit: ${COSTS.job} units. ` +
    `A project runs at most JOB_MAX_RUNNING export and verify jobs at once (queued or running; ${DEFAULT_MAX_RUNNING} by default): past it, 429 RATE_LIMITED with details.reason jobs_running and Retry-After. ` +
    "A verify of the same range (from, to and since) as a verify still queued or running joins it: the answer is 202 with that job, even at the cap. " +
    "The job records the key that created it: canceling or deleting it needs that key or its scope.",
  request: { body: { required: true, content: { "application/json": { schema: createJobSchema } } } },
  responses: {
    202: json(jobEnvelopeSchema, "The job, queued (or the live verify of the same range it joined)"),
    ...errors(...AUTH_ERRORS, "VALIDATION_ERROR", "UNSUPPORTED_MEDIA_TYPE", "EVENT_TOO_LARGE"),
  },
}));
jobs.post("/", READ.guard, async (c) => {
  const credential = apiKeyOf(c.get("credential"), KEY_NEEDED);
  const projectId = projectOf(credential);
  const body = await readJsonObject(c);
  const schema = body.type === "export" ? exportJobSchema : body.type === "verify" ? verifyJobSchema : null;
  if (!schema) throw validationError([{ path: "type", message: "type must be export or verify" }]);
  // metadata.<key> filters are named by the catalog, not the schema (src/middleware/metadata-filters.ts).
  const metadata = body.type === "export" ? metadataFields(body) : [];
  const parsed = schema.safeParse(body.type === "export" ? Object.fromEntries(Object.entries(body).filter(([k]) => !k.startsWith("metadata."))) : body);
  if (!parsed.success) throw validationError(toIssues(parsed.error));
  const id = crypto.randomUUID();
  let params: Record<string, unknown>;
  if (parsed.data.type === "export") {
    const { type: _type, format, part_rows, evidence, ...filters } = parsed.data;
    const selection = await withMetadata(c, credential, selectionFor(credential, filters), metadata);
    params = { format, part_rows: part_rows ?? PART_ROWS, filters: { ...filters, ...Object.fromEntries(metadata.map(([k, v]) => [`metadata.${k}`, v])) }, selection, evidence: evidence === true };
  } else {
    params = { window: { from: parsed.data.from ?? null, to: parsed.data.to ?? null }, since: parsed.data.since ?? null };
  }
  const max = maxRunning(c.env);
  const admitted = await admitJob(c.env, projectId, id, parsed.data.type, params, creatorOf(credential), max);
  if (!admitted.job) {
    c.header("Retry-After", String(FULL_RETRY_S));
    throw new ApiError(
      "RATE_LIMITED",
      `This project already has ${admitted.running} jobs queued or running and runs at most ${max} jobs at once; retry in ${FULL_RETRY_S} s, once one has ended (GET /v1/jobs), or cancel one (DELETE /v1/jobs/{id})`,
      { reason: "jobs_running", limit: max, running: admitted.running, retry_after: FULL_RETRY_S },
    );
  }
  const job = admitted.job;
  // Its instance was started by the POST that made it.
  if (admitted.joined) return c.json({ data: jobView(job) }, 202);
  // Not awaited: the local Workflows engine (wrangler dev, tests) runs an instance's first steps before create() returns,
  // which would hold this answer for a whole small job. A create that fails leaves the job failed, saying so.
  const started = c.env.JOBS.create({ id, params: { jobId: id, projectId, type: parsed.data.type } }).catch((error: unknown) =>
    finishJob(c.env, projectId, id, { status: "failed", error: { code: "JOB_NOT_STARTED", message: error instanceof Error ? error.message : String(error) } }),
  );
  c.executionCtx.waitUntil(started);
  return c.json({ data: jobView(job) }, 202);
});

documented(jobs, createRoute({
  method: "get", path: "/", tags: ["Jobs"], operationId: "listJobs", summary: "The project's jobs, newest first", security: READ.security,
  description: "Like GET /v1/jobs/{id}, restarts the lost jobs on the page (up to 10 a page).",
  request: { query: jobListQuery },
  responses: { 200: json(jobPageSchema, "A page of jobs"), ...errors(...AUTH_ERRORS, "VALIDATION_ERROR") },
}));
jobs.get("/", READ.guard, validate("query", jobListQuery), async (c) => {
  const { limit = 50, cursor } = c.req.valid("query");
  const after = cursor === undefined ? null : decodeJobCursor(cursor);
  if (cursor !== undefined && after === null) throw validationError([{ path: "cursor", message: "cursor must be a nextCursor from an earlier page" }]);
  const page = await listJobs(c.env, projectOf(c.get("credential")), after, limit + 1);
  const more = page.length > limit;
  // The live jobs among them whose record stopped moving for a minute: their lost instances are restarted (src/jobs/job-resume.ts).
  const shown = await resumeLostOnPage(c.env, page.slice(0, limit));
  return c.json({ data: shown.map(jobView), nextCursor: more ? encodeJobCursor(shown[shown.length - 1]) : null });
});

documented(jobs, createRoute({
  method: "get", path: "/{id}", tags: ["Jobs"], operationId: "getJob", summary: "A job: status, progress, result, files", security: READ.security,
  description:
    "A queued or running job whose record has not moved for a minute (a running step renews it every 15 s) while its workflow instance is gone, ended or idle " +
    "has lost its runtime: this read restarts it, and it goes on from the progress it recorded. One whose instance errored or was terminated outside its steps is failed.",
  request: { params: idParam },
  responses: { 200: json(jobEnvelopeSchema, "The job"), ...errors(...AUTH_ERRORS, "NOT_FOUND") },
}));
jobs.get("/:id", READ.guard, async (c) => {
  const projectId = projectOf(c.get("credential"));
  const job = await getJob(c.env, projectId, c.req.param("id"));
  if (!job) throw new ApiError("NOT_FOUND", "No job with that id in this project");
  // The record says how far the steps got; the instance, whether it still lives: one ended outside its steps fails the job,
  // one lost (the record idle for a minute) is restarted, an erasure's never failed (src/jobs/job-resume.ts).
  return c.json({ data: jobView(await resumeIfLost(c.env, job)) });
});

documented(jobs, createRoute({
  method: "delete", path: "/{id}", tags: ["Jobs"], operationId: "cancelJob", summary: "Cancel a job and delete its files", security: READ.security,
  description:
    "A queued or running job stops (status canceled); any job's files are deleted at once. An erasure's job cannot be canceled (400). " +
    "Needs the key that created the job or its scope (created_by_scope): an admin's job needs admin, one made before jobs recorded their creator too; otherwise 403 FORBIDDEN with details.required_scope. " +
    "Each cancel or delete of an export job is recorded in the chain first, as witness.job.canceled or witness.job.deleted (what was stopped and who created it, never its filters).",
  request: { params: idParam },
  responses: { 200: json(jobEnvelopeSchema, "The job after"), ...errors(...AUTH_ERRORS, "NOT_FOUND", "VALIDATION_ERROR") },
}));
jobs.delete("/:id", READ.guard, async (c) => {
  const credential = apiKeyOf(c.get("credential"), KEY_NEEDED);
  const projectId = projectOf(credential);
  const id = c.req.param("id");
  const job = await getJob(c.env, projectId, id);
  if (!job) throw new ApiError("NOT_FOUND", "No job with that id in this project");
  // An erasure, once accepted, is applied to the end: its job is not the client's to stop.
  if (job.type === "erasure") throw validationError([{ path: "id", message: "an erasure's job cannot be canceled; it ends once the erasure is applied" }]);
  const refusal = stopRefusal(credential, job);
  if (refusal) throw new ApiError("FORBIDDEN", refusal.message, { required_scope: refusal.scope, key_scopes: credential.scopes });
  // Recorded before anything goes: a stop that fails after it is at worst recorded twice when retried, never not at all.
  const kind = stopKind(job);
  if (kind) await recordJobStop(c.env, job, kind, auditActor(credential), requestContext(c.req.raw));
  // The record first: a step still under way then records nothing and deletes what it wrote.
  await cancelJob(c.env, projectId, id);
  if (job.status === "queued" || job.status === "running") {
    try {
      await (await c.env.JOBS.get(id)).terminate();
    } catch (error) {
      // Already ended (between our read and here): the record says canceled either way, and its files go below.
      console.warn(`job ${id}: terminate: ${error instanceof Error ? error.message : error}`);
    }
  }
  await deleteJobFiles(c.env, projectId, id);
  return c.json({ data: jobView((await getJob(c.env, projectId, id))!) });
});

documented(jobs, createRoute({
  method: "get", path: "/{id}/files/{name}", tags: ["Jobs"], operationId: "getJobFile", summary: "Download one of an export job's files", security: READ.security,
  description: "Range: bytes=a-b (one range) answers 206 with Content-Range; a range outside the file, 416.",
  request: { params: z.object({ id: z.string(), name: z.string() }) },
  responses: {
    200: { description: "The file", content: { "text/csv": { schema: z.string() }, "application/json": {} } },
    206: { description: "The range asked for", content: { "text/csv": { schema: z.string() }, "application/json": {} } },
    ...errors(...AUTH_ERRORS, "NOT_FOUND", "RANGE_NOT_SATISFIABLE"),
  },
}));
jobs.get("/:id/files/:name", READ.guard, async (c) => {
  const projectId = projectOf(c.get("credential"));
  const job = await getJob(c.env, projectId, c.req.param("id"));
  const file = job && !job.filesExpired ? job.files.find((f) => f.name === c.req.param("name")) : undefined;
  if (!job || !file) throw new ApiError("NOT_FOUND", "No such file in this project's job (or it expired)");
  const range = parseRange(c.req.header("Range"), file.bytes);
  if (range === "unsatisfiable") {
    c.header("Content-Range", `bytes */${file.bytes}`);
    throw new ApiError("RANGE_NOT_SATISFIABLE", `The range is outside the file's ${file.bytes} bytes`, { bytes: file.bytes });
  }
  const object = await c.env.EXPORTS.get(fileKey(projectId, job.id, file.name), range ? { range } : {});
  if (!object) throw new ApiError("NOT_FOUND", "The file is gone (canceled or expired)");
  const headers: Record<string, string> = {
    "Content-Type": object.httpMetadata?.contentType ?? "application/octet-stream",
    "Accept-Ranges": "bytes",
    "Cache-Control": "no-store",
    "Content-Disposition": `attachment; filename="${file.name}"`,
    ETag: `"${file.sha256}"`,
  };
  if (!range) return c.body(object.body, 200, headers);
  headers["Content-Range"] = `bytes ${range.offset}-${range.offset + range.length - 1}/${file.bytes}`;
  return c.body(object.body, 206, headers);
});

documented(jobs, createRoute({
  method: "get", path: "/{id}/archive", tags: ["Jobs"], operationId: "getJobArchive", summary: "Download all of an export job's files as one zip", security: READ.security,
  description:
    "The files GET /v1/jobs/{id} lists, streamed as one zip (deflated) with each at its root under the name of its own url: unzipped, the folder " +
    "`npm run export:verify` checks. An evidence export's manifest.json comes first, then the parts in order. " +
    "Every file is checked before the first byte: a job queued or running, or one that failed, is 409 CONFLICT (details.reason job_not_finished or job_failed); " +
    "one canceled, or whose files expired or were erased, 404. No zip64: a job of more than 9,000 files or about 4 GiB is 409 (details.reason archive_too_large); " +
    "download its files one by one.",
  request: { params: idParam },
  responses: {
    200: {
      description: "The zip",
      headers: { "Content-Disposition": { description: 'attachment; filename="witness-<job id>.zip"', schema: { type: "string" } } },
      content: { "application/zip": { schema: z.string().meta({ format: "binary" }) } },
    },
    ...errors(...AUTH_ERRORS, "NOT_FOUND", "CONFLICT"),
  },
}));
jobs.get("/:id/archive", READ.guard, async (c) => {
  const projectId = projectOf(c.get("credential"));
  const job = await getJob(c.env, projectId, c.req.param("id"));
  const refusal = archiveRefusal(job);
  if (refusal) throw refusal;
  const files = archiveOrder(job!.files);
  const missing = await missingFiles(c.env, projectId, job!.id, files);
  if (missing.length > 0) throw new ApiError("NOT_FOUND", "Some of the job's files are gone (deleted, expired or erased)", { missing: missing.slice(0, 20) });
  return c.body(archiveStream(c.env, projectId, job!.id, files, new Date(job!.updatedAt)), 200, {
    "Content-Type": "application/zip",
    "Cache-Control": "no-store",
    "Content-Disposition": `attachment; filename="witness-${job!.id}.zip"`,
  });
});

export default jobs;
