import { z } from "zod";
import { decodeCursor, normalizeTimestamp } from "../model/cursor";

export const MAX_LIMIT = 200;
export const DEFAULT_LIMIT = 50;
export const MAX_ACTIONS = 50;
export const MAX_QUERY_LENGTH = 255;

// An empty parameter (`?organization=`) counts as absent: forms and clients that
// always send every field should not turn a blank box into a filter or a 400.
export const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (v === "" ? undefined : v), schema.optional());

/** A page's `limit`: a whole number from 1 to max, `fallback` when absent; `what` names what a page holds. */
export const limitParam = (max: number, fallback: number, what: string) =>
  optional(
    z
      .string("limit must be given once")
      .regex(/^\d+$/, `limit must be a whole number from 1 to ${max}`)
      .transform(Number)
      .pipe(z.number().min(1, `limit must be from 1 to ${max}`).max(max, `limit must be from 1 to ${max}`)),
  )
    .transform((v) => v ?? fallback)
    .meta({ description: `${what} per page, 1 to ${max} (default ${fallback})` });

const text = (name: string, max: number, description?: string) =>
  optional(z.string(`${name} must be given once`).max(max, `${name} must be at most ${max} characters`)).meta({ description });

/** An optional ISO 8601 timestamp parameter, normalized to UTC with milliseconds (list filters, verify's window, chart ranges). */
export const timestampParam = (name: string, description?: string) =>
  optional(
    z.string(`${name} must be given once`).transform((v, ctx) => {
      const normalized = normalizeTimestamp(v);
      if (normalized === null) {
        ctx.addIssue({ code: "custom", message: `${name} must be an ISO 8601 timestamp with a zone, like 2026-05-05T05:05:05.000Z` });
        return z.NEVER;
      }
      return normalized;
    }),
  ).meta({ description });

const timestamp = (name: string) =>
  timestampParam(name, "ISO 8601 timestamp with a zone, like 2026-05-05T05:05:05.000Z; compared with occurred_at, inclusive");

const actionList = (name: string) =>
  optional(
    z.string(`${name} must be given once`).transform((v, ctx) => {
      const list = [...new Set(v.split(",").map((a) => a.trim()).filter((a) => a !== ""))];
      if (list.length === 0) ctx.addIssue({ code: "custom", message: `${name} must list at least one action` });
      if (list.length > MAX_ACTIONS) ctx.addIssue({ code: "custom", message: `${name} accepts at most ${MAX_ACTIONS} actions` });
      if (list.some((a) => a.length > 255)) ctx.addIssue({ code: "custom", message: `each action in ${name} is at most 255 characters` });
      return list;
    }),
  ).meta({ description: `Comma-separated actions (at most ${MAX_ACTIONS})` });

/** The filters shared by list, search and export. */
export const filterShape = {
  organization: text("organization", 128, "Only this organization's events"),
  actor_id: text("actor_id", 255, "Only this actor's events"),
  action: text("action", 255, "Only this exact action"),
  actions: actionList("actions"),
  actions_exclude: actionList("actions_exclude"),
  ip_address: text("ip_address", 255, "Only events sent from this address"),
  target_type: text("target_type", 255, "Only events with a target of this type"),
  target_id: text("target_id", 255, "Only events with this target (needs target_type: an id is only unique within its type)"),
  date_from: timestamp("date_from"),
  date_to: timestamp("date_to"),
};

export const dateOrder = {
  check: (q: { date_from?: string; date_to?: string }) => !q.date_from || !q.date_to || q.date_from <= q.date_to,
  params: { message: "date_from must not be after date_to", path: ["date_from"] },
};

/** target_id alone would match the same id under every type: refuse it rather than guess. */
export const targetPair = {
  check: (q: { target_type?: string; target_id?: string }) => q.target_id === undefined || q.target_type !== undefined,
  params: { message: "target_id needs target_type", path: ["target_id"] },
};

const pageShape = {
  limit: limitParam(MAX_LIMIT, DEFAULT_LIMIT, "Events"),
  cursor: optional(
    z.string("cursor must be given once").transform((v, ctx) => {
      const cursor = decodeCursor(v);
      if (cursor === null) {
        ctx.addIssue({ code: "custom", message: "cursor must be a nextCursor from an earlier page or an ISO 8601 timestamp" });
        return z.NEVER;
      }
      return cursor;
    }),
  ).meta({ description: "The nextCursor of the previous page (or an ISO 8601 timestamp to start from)" }),
};

export const listQuerySchema = z.object({ ...filterShape, ...pageShape }).refine(dateOrder.check, dateOrder.params).refine(targetPair.check, targetPair.params);

export const searchQuerySchema = z
  .object({
    ...filterShape,
    ...pageShape,
    q: z
      .string("q is required, once")
      .min(1, "q must not be empty")
      .max(MAX_QUERY_LENGTH, `q must be at most ${MAX_QUERY_LENGTH} characters`)
      .meta({ description: "Words to find in action, actor name, e-mail and id (prefix match; words under 2 characters are ignored; at most 8 words)" }),
  })
  .refine(dateOrder.check, dateOrder.params).refine(targetPair.check, targetPair.params);

export const exportQuerySchema = z
  .object({
    ...filterShape,
    format: z.enum(["csv", "json", "ocsf"], "format must be csv, json or ocsf").meta({
      description: "csv; json (an array of events); ocsf (an array of OCSF 1.3.0 events: API Activity, or the class the action's catalog schema names)",
    }),
  })
  .refine(dateOrder.check, dateOrder.params).refine(targetPair.check, targetPair.params);

export type Filters = z.infer<z.ZodObject<typeof filterShape>>;
