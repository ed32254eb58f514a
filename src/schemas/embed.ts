import { z } from "zod";
import { EMBED_TTL } from "../auth/embed-token";

export const embedTokenRequestSchema = z.strictObject({
  organization: z
    .string("organization must be a string")
    .min(1, "organization must not be empty")
    .max(128, "organization must be at most 128 characters")
    .nullish(),
  ttl_seconds: z
    .int("ttl_seconds must be a whole number of seconds")
    .min(EMBED_TTL.min, `ttl_seconds must be at least ${EMBED_TTL.min}`)
    .max(EMBED_TTL.max, `ttl_seconds must be at most ${EMBED_TTL.max}`)
    .nullish(),
  /** Events read with the token carry their metadata; off by default (see reducedEventJson). */
  include_metadata: z.boolean("include_metadata must be true or false").nullish(),
});

export const demoQuerySchema = z.object({
  organization: z.string().min(1).max(128).optional(),
});
