import { z } from "zod";
import { PART_ROWS, MIN_PART_ROWS } from "../jobs/export-job";
import { filterShape, targetPair } from "./list-query";
import { verifyQuery } from "./verify";

const dateOrder = (q: { date_from?: string; date_to?: string }) => !q.date_from || !q.date_to || q.date_from <= q.date_to;

/** POST /v1/jobs, type export: GET /v1/exports' format and filters (same syntax: actions comma-separated). */
export const exportJobSchema = z
  .object({
    type: z.literal("export"),
    format: z.enum(["csv", "json", "ocsf"], "format must be csv, json or ocsf"),
    ...filterShape,
    part_rows: z
      .number("part_rows must be a number")
      .int("part_rows must be a whole number")
      .min(MIN_PART_ROWS, `part_rows must be from ${MIN_PART_ROWS} to ${PART_ROWS}`)
      .max(PART_ROWS, `part_rows must be from ${MIN_PART_ROWS} to ${PART_ROWS}`)
      .optional()
      .meta({ description: `Rows per file, ${MIN_PART_ROWS} to ${PART_ROWS} (default ${PART_ROWS})` }),
    evidence: z.boolean("evidence must be true or false").optional().meta({
      description:
        "An evidence export (JSON only): each file also carries what proves its rows' place in the transparency log, and a signed manifest.json ends the files; `npm run export:verify` checks them offline",
    }),
  })
  .strict()
  .refine(dateOrder, { message: "date_from must not be after date_to", path: ["date_from"] })
  .refine(targetPair.check, targetPair.params)
  // CSV cannot tell null from empty text, and the hashes an evidence check recomputes need that difference.
  .refine((q) => !q.evidence || q.format === "json", { message: "evidence exports are JSON: format must be json", path: ["format"] });

/** POST /v1/jobs, type verify: GET /v1/events/verify's window. */
export const verifyJobSchema = z
  .object({ type: z.literal("verify"), ...verifyQuery.shape })
  .strict()
  .refine((q) => !q.from || !q.to || q.from <= q.to, { message: "from must not be after to", path: ["from"] });

export const createJobSchema = z.union([exportJobSchema, verifyJobSchema]).meta({ id: "JobCreateRequest" });

const fileSchema = z.object({
  name: z.string(),
  bytes: z.number().int(),
  rows: z.number().int(),
  sha256: z.string(),
  url: z.string().meta({ description: "GET it with the same API key; Range supported" }),
});

export const jobSchema = z
  .object({
    id: z.string(),
    type: z.enum(["export", "verify", "erasure"]).meta({ description: "erasure: an erasure's job, made by DELETE /v1/actors/:id (it cannot be created or canceled here)" }),
    status: z.enum(["queued", "running", "succeeded", "failed", "canceled"]),
    progress: z.object({ done: z.number().int(), total: z.number().int() }).meta({
      description: "Export: rows written of the rows to write (with filters, total counts archived rows in the date window until the job ends). Verify: chunks checked of chunks. Erasure: events anonymized so far (total is known when it ends)",
    }),
    created_at: z.string(),
    updated_at: z.string().meta({
      description: "When the record last moved: a step renews it every 15 s while it works, so a queued or running job idle for a minute has lost its runtime and is resumed",
    }),
    created_by: z.string().nullable().meta({
      description: "The prefix of the API key that created it; null for an erasure's job and for jobs made before creators were recorded",
    }),
    created_by_scope: z.enum(["read", "admin"]).nullable().meta({
      description: "The strongest scope that key held: canceling or deleting the job needs it, or the same key (null: needs admin)",
    }),
    result: z.unknown().optional().meta({ description: "Verify: what GET /v1/events/verify answers. Erasure: {erasure_id, anonymized}" }),
    error: z.object({ code: z.string(), message: z.string() }).optional().meta({ description: "Why the job failed or was canceled. On a running erasure job (code JOB_RETRYING): why its last attempt stopped; it is resumed, never given up" }),
    files: z.array(fileSchema).optional().meta({
      description: "Export: the files written so far, in order; concatenated they are exactly GET /v1/exports' body. Empty once expired or deleted",
    }),
    files_expire_at: z.string().nullable().optional().meta({ description: "When the daily sweep deletes the files: 7 days after the job ended" }),
    files_expired: z.boolean().optional(),
  })
  .meta({ id: "Job" });

export const jobEnvelopeSchema = z.object({ data: jobSchema });
export const jobPageSchema = z.object({ data: z.array(jobSchema), nextCursor: z.string().nullable() });

export const jobListQuery = z.object({
  limit: z.preprocess(
    (v) => (v === "" ? undefined : v),
    z.string().regex(/^\d+$/, "limit must be a whole number from 1 to 100").transform(Number).pipe(z.number().min(1, "limit must be from 1 to 100").max(100, "limit must be from 1 to 100")).optional(),
  ),
  cursor: z.preprocess((v) => (v === "" ? undefined : v), z.string().max(200, "cursor must be a nextCursor from an earlier page").optional()),
});
