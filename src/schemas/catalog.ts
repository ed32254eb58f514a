import { z } from "zod";
import { CATALOG_MODES, UNKNOWN_ACTIONS } from "../catalog/catalog-store";
import { MAX_SCHEMA_BYTES } from "../catalog/schema-document";
import { MAX_TEMPLATE_CHARS } from "../catalog/display-template";
import { SELF_AUDIT_PREFIX } from "../model/erasable";
import { actionCursorParam, encodeActionCursor } from "./actions";
import { limitParam } from "./list-query";

export const MAX_SCHEMAS_PAGE = 100;

/** The {action} of /v1/schemas/{action}: an action an application may record. */
export const actionParam = z.object({
  action: z
    .string()
    .min(1, "action must not be empty")
    .max(255, "action must be at most 255 characters")
    .refine((a) => !a.startsWith(SELF_AUDIT_PREFIX), `actions starting with "${SELF_AUDIT_PREFIX}" are Witness's own records and have no schema`)
    .meta({ description: "The action, as events name it (for example `member.role.changed`)" }),
});

export const versionParam = actionParam.extend({
  version: z.coerce
    .number("version must be a whole number")
    .int("version must be a whole number")
    .min(1, "version must be at least 1")
    .meta({ description: "The version, from 1" }),
});

/**
 * The body of PUT /v1/schemas/{action}. Its shape only: what JSON Schema and
 * the display template may hold is checked by src/catalog/schema-document.ts,
 * which names the path of every problem.
 */
export const schemaDocumentSchema = z
  .strictObject({
    description: z.string().max(1000).nullish().meta({ description: "What the action means, for people reading the catalog" }),
    metadata: z
      .union([z.record(z.string(), z.unknown()), z.boolean()])
      .nullish()
      .meta({ description: "A JSON Schema (2020-12) for the event's metadata object. Local `$ref`s only" }),
    targets: z
      .array(z.strictObject({ type: z.string().min(1).max(64), required: z.boolean().optional() }))
      .max(20)
      .nullish()
      .meta({ description: "The target types the action may name; `required` ones must be present" }),
    actor_types: z.array(z.string().min(1).max(64)).max(20).nullish().meta({ description: "The actor types allowed" }),
    changes: z
      .strictObject({ fields: z.array(z.string().min(1).max(255)).min(1).max(50) })
      .nullish()
      .meta({ description: "The fields `changes` may name" }),
    filterable: z
      .array(z.string())
      .max(8)
      .nullish()
      .meta({ description: "Up to 8 top-level metadata keys, declared as scalars in `metadata`, that list, search and exports may filter on (`metadata.<key>=`)" }),
    ocsf: z
      .strictObject({ class_uid: z.int(), activity_id: z.int().nullable().optional() })
      .nullish()
      .meta({ description: "The OCSF class (and activity) format=ocsf writes this action's events as; absent: API Activity (6003), the activity derived from the action's last word" }),
    display: z
      .string()
      .max(MAX_TEMPLATE_CHARS)
      .nullish()
      .meta({
        description:
          "The event's sentence: text with `{path}` placeholders (`{actor.name|actor.id}`, `{targets.user.name}`, `{metadata.role}`, " +
          "`{changes.role.before}`, a quoted default `{actor.name|\"someone\"}`; `{{` and `}}` are literal braces)",
      }),
  })
  .meta({ id: "SchemaDocument", description: `At most ${MAX_SCHEMA_BYTES} bytes as JSON` });

const versionInfo = z.object({
  version: z.int(),
  sha256: z.string().meta({ description: "SHA-256 (hex) of the version's document as canonical JSON (RFC 8785), as recorded in the chain's witness.schema.changed event" }),
  created_at: z.string(),
  created_by: z.string().meta({ description: "The admin key's prefix, or operator" }),
});

export const storedSchemaSchema = versionInfo
  .extend({
    action: z.string(),
    document: schemaDocumentSchema,
  })
  .meta({ id: "ActionSchema" });

export const schemaResponseSchema = z.object({ data: storedSchemaSchema });
export const schemaDetailSchema = z.object({
  data: storedSchemaSchema.extend({ versions: z.array(versionInfo).meta({ description: "Every version, oldest first" }) }),
});
export const schemaPageSchema = z.object({ data: z.array(storedSchemaSchema), nextCursor: z.string().nullable() }).meta({ id: "SchemaPage" });

export const schemaListQuery = z.object({
  limit: limitParam(MAX_SCHEMAS_PAGE, 50, "Schemas"),
  cursor: actionCursorParam(),
});
export { encodeActionCursor as encodeSchemaCursor };

export const catalogSettingsSchema = z
  .strictObject({
    mode: z.enum(CATALOG_MODES, 'mode must be "off", "warn" or "enforce"').meta({
      description: "off: nothing is checked. warn: every event is stored and says which schema version it broke. enforce: an event that breaks its schema is refused (400)",
    }),
    unknown_actions: z
      .enum(UNKNOWN_ACTIONS, 'unknown_actions must be "allow" or "reject"')
      .default("allow")
      .meta({ description: "reject: under enforce, an event whose action has no schema is refused" }),
  })
  .meta({ id: "CatalogSettings" });

export const catalogSettingsResponse = z.object({ data: catalogSettingsSchema });
