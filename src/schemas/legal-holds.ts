import { z } from "zod";
import { MAX_REASON_CHARS } from "../chain/legal-holds";

/** POST /v1/legal-holds. An organization, an actor id, or both (that actor's events in that organization). */
export const placeHoldSchema = z
  .object({
    organization: z.string("organization must be a string").min(1, "organization must not be empty").max(128, "organization must be at most 128 characters").optional(),
    actor_id: z.string("actor_id must be a string").min(1, "actor_id must not be empty").max(255, "actor_id must be at most 255 characters").optional(),
    reason: z
      .string("reason is required: why the events must be kept (a case, a request)")
      .trim()
      .min(1, "reason must not be empty")
      .max(MAX_REASON_CHARS, `reason is at most ${MAX_REASON_CHARS} characters`),
  })
  .strict()
  .refine((h) => h.organization !== undefined || h.actor_id !== undefined, {
    message: "a hold names an organization, an actor_id, or both",
    path: ["organization"],
  });

export const legalHoldSchema = z
  .object({
    id: z.string(),
    organization: z.string().nullable(),
    actor_id: z.string().nullable(),
    reason: z.string(),
    placed_at: z.string(),
    placed_by: z.string().meta({ description: "Prefix of the API key that placed it" }),
    released_at: z.string().nullable().meta({ description: "null while the hold is in force" }),
    released_by: z.string().nullable(),
  })
  .meta({ id: "LegalHold" });

export const legalHoldResponseSchema = z.object({ data: legalHoldSchema }).meta({ id: "LegalHoldResponse" });
export const legalHoldListSchema = z.object({ data: z.array(legalHoldSchema) }).meta({ id: "LegalHoldList" });
export const holdParamSchema = z.object({ id: z.string().meta({ description: "The hold's id (GET /v1/legal-holds)" }) });
