import { z } from "zod";
import { MAX_LABEL_CHARS } from "../auth/key-store";
import { SCOPES } from "../auth/scopes";
import { normalizeTimestamp } from "../model/cursor";

const scope = z.enum(SCOPES, `each scope is one of ${SCOPES.join(", ")}`);

/** POST /v1/keys. */
export const createKeySchema = z
  .object({
    scopes: z.array(scope, "scopes must be a list").min(1, "name at least one scope").max(SCOPES.length),
    label: z.string("label must be a string").trim().min(1, "label must not be empty").max(MAX_LABEL_CHARS, `label is at most ${MAX_LABEL_CHARS} characters`).optional(),
    expires_at: z
      .string("expires_at must be a string")
      .transform((v, ctx) => {
        const normalized = normalizeTimestamp(v);
        if (normalized === null) {
          ctx.addIssue({ code: "custom", message: "expires_at must be an ISO 8601 timestamp with a zone, like 2027-01-01T00:00:00.000Z" });
          return z.NEVER;
        }
        if (normalized <= new Date().toISOString()) {
          ctx.addIssue({ code: "custom", message: "expires_at must be in the future" });
          return z.NEVER;
        }
        return normalized;
      })
      .optional(),
  })
  .strict();

export const keyInfoSchema = z
  .object({
    prefix: z.string().meta({ description: "The key's public part: wtn_live_<prefix>_..." }),
    scopes: z.array(scope),
    label: z.string().nullable(),
    created_at: z.string(),
    expires_at: z.string().nullable(),
    revoked_at: z.string().nullable(),
    created_by: z.string().nullable().meta({ description: "Prefix of the admin key that made it; null when an operator script did" }),
  })
  .meta({ id: "ApiKeyInfo" });

export const keyCreatedSchema = z
  .object({ data: keyInfoSchema.extend({ key: z.string().meta({ description: "The whole key, shown this once" }) }) })
  .meta({ id: "ApiKeyCreated" });
export const keyListSchema = z.object({ data: z.array(keyInfoSchema) }).meta({ id: "ApiKeyList" });
export const keyRevokedSchema = z.object({ data: keyInfoSchema }).meta({ id: "ApiKeyRevoked" });
