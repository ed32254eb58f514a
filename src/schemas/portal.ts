import { z } from "zod";
import { ABILITIES, LINK_TTL, SESSION_SECONDS } from "../auth/portal";

/** POST /v1/portal/links. */
export const createPortalLinkSchema = z
  .strictObject({
    organization: z
      .string("organization must be a string")
      .min(1, "organization must not be empty")
      .max(128, "organization is at most 128 characters")
      .meta({ description: "The customer organization the portal shows: its events only, streams filtered to it" }),
    abilities: z
      .array(z.enum(ABILITIES, `each ability is one of ${ABILITIES.join(", ")}`))
      .min(1, "give at least one ability")
      .max(ABILITIES.length)
      .refine((a) => new Set(a).size === a.length, "each ability at most once")
      .meta({ description: "events: read and search them; exports: download them; streams: create, test, pause, resume and delete the organization's own streams" }),
    ttl_seconds: z
      .int("ttl_seconds must be a whole number")
      .min(LINK_TTL.min, `ttl_seconds is at least ${LINK_TTL.min}`)
      .max(LINK_TTL.max, `ttl_seconds is at most ${LINK_TTL.max} (7 days)`)
      .optional()
      .meta({ description: `How long the link may be opened (once); default ${LINK_TTL.default} (a day). The session it opens lasts ${SESSION_SECONDS / 60} minutes` }),
  })
  .meta({ id: "PortalLinkInput" });

export const portalLinkSchema = z
  .object({
    id: z.string(),
    organization: z.string(),
    abilities: z.array(z.enum(ABILITIES)),
    created_at: z.string(),
    expires_at: z.string().meta({ description: "The link cannot be opened after this" }),
    url: z.string().meta({ description: "The one-time address to hand to the customer's admin; in this answer only" }),
  })
  .meta({ id: "PortalLink" });

export const portalLinkResponse = z.object({ data: portalLinkSchema });
