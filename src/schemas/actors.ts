import { z } from "zod";

export const actorParamSchema = z.object({
  id: z.string().min(1, "the actor id must not be empty").max(255, "the actor id is at most 255 characters"),
});

export const erasureQuerySchema = z.object({
  organization: z
    .string("organization must be given once")
    .min(1, "organization must not be empty")
    .max(128, "organization must be at most 128 characters")
    .optional(),
  /** id (default): the path names actor.id; email: it names actor.email, for actors sent without an id. */
  by: z.enum(["id", "email"], "by must be id or email").default("id"),
});

/** DELETE /v1/actors/:id: accepted, applied at read time from now on, and being applied to the stored events by its job. */
export const erasureAcceptedSchema = z
  .object({
    data: z.object({
      actor_id: z.string(),
      by: z.enum(["id", "email"]),
      organization: z.string().nullable(),
      status: z.literal("applying").meta({
        description: "Accepted: every read already leaves the actor's personal data out; the job scrubs the stored events, then succeeds",
      }),
      erasure_id: z.int().meta({ description: "The ledger's erasure record (also in the witness.actor.erased event)" }),
      job_id: z.string().meta({ description: "Poll GET /v1/jobs/<job_id>: succeeded with result {erasure_id, anonymized} once applied" }),
    }),
  })
  .meta({ id: "ErasureResponse" });

/** GET /v1/actors/:id/erasures: by names what the path is, as for the erasure itself. */
export const erasureLookupQuerySchema = erasureQuerySchema.pick({ by: true });

export const actorErasuresSchema = z
  .object({
    data: z.array(
      z
        .object({
          erasure_id: z.int().meta({ description: "The ledger's erasure record (also in the witness.actor.erased event, as its target of type erasure)" }),
          by: z.enum(["id", "email"]),
          organization: z.string().nullable().meta({ description: "Set when the erasure covered only this organization's events" }),
          erased_at: z.string().meta({ description: "When it was accepted: the anonymized_at of the events it scrubbed" }),
          status: z.enum(["applying", "applied"]).meta({
            description: "applying: its job is still scrubbing the stored events (every read already leaves the personal data out); applied: done",
          }),
          anonymized: z.int().nullable().meta({ description: "Events it anonymized; null while applying" }),
        })
        .meta({ id: "ActorErasure" }),
    ),
  })
  .meta({ id: "ActorErasuresResponse" });
