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
