import { createRoute } from "@hono/zod-openapi";
import { ledgerOf } from "../chain/ledger";
import { forgetCatalog } from "../catalog/catalog-cache";
import { MAX_SCHEMAS } from "../catalog/catalog-store";
import { MAX_SCHEMA_BYTES, parseSchemaDocument } from "../catalog/schema-document";
import { ApiError } from "../lib/errors";
import { readJsonObject } from "../lib/request-body";
import { toIssues, validate, validationError } from "../lib/validate";
import { access, auditActor, projectOf } from "../middleware/credential";
import { requestContext } from "../middleware/ingest";
import { AUTH_ERRORS, documented, errors, json, router } from "../middleware/openapi";
import {
  actionParam,
  catalogSettingsResponse,
  catalogSettingsSchema,
  encodeSchemaCursor,
  schemaDetailSchema,
  schemaDocumentSchema,
  schemaListQuery,
  schemaPageSchema,
  schemaResponseSchema,
  versionParam,
} from "../schemas/catalog";

/**
 * The action catalog (src/catalog/): per-action schemas, each change a new
 * immutable version recorded in the chain, and the project's validation
 * settings. Everything lives in the project's ledger, which checks ingest
 * against the version current when the event is committed.
 */
export const schemas = router();
export const catalogSettings = router();
const READ = access("read");
const ADMIN = access("admin");

documented(schemas, createRoute({
  method: "put", path: "/{action}", tags: ["Catalog"], operationId: "putSchema", summary: "Add the next version of an action's schema", security: ADMIN.security,
  description:
    "Creates version n+1 (immutable) and answers it. A metadata schema that is not JSON Schema 2020-12, refers outside itself, refers to itself without end, " +
    `uses a keyword Witness does not support, or a document over ${MAX_SCHEMA_BYTES} bytes is a 400 naming the path. An invalid display template is a 400. ` +
    `At most ${MAX_SCHEMAS} actions per project have schemas. Recorded in the chain as witness.schema.changed (action, version, sha256).`,
  request: { params: actionParam, body: { required: true, content: { "application/json": { schema: schemaDocumentSchema } } } },
  responses: { 201: json(schemaResponseSchema, "The new version"), ...errors(...AUTH_ERRORS, "VALIDATION_ERROR", "UNSUPPORTED_MEDIA_TYPE", "EVENT_TOO_LARGE") },
}));
schemas.put("/:action", ADMIN.guard, validate("param", actionParam), async (c) => {
  const credential = c.get("credential");
  const projectId = projectOf(credential);
  const raw = await readJsonObject(c);
  const size = new TextEncoder().encode(JSON.stringify(raw)).byteLength;
  if (size > MAX_SCHEMA_BYTES) {
    throw new ApiError("VALIDATION_ERROR", `The schema document is ${size} bytes; the limit is ${MAX_SCHEMA_BYTES} bytes`, {
      issues: [{ path: "", message: `must be at most ${MAX_SCHEMA_BYTES} bytes as JSON` }],
      size,
      limit: MAX_SCHEMA_BYTES,
    });
  }
  // The catalog's own check first: it names the path of every problem, inside the JSON Schema too.
  const parsed = parseSchemaDocument(raw);
  if (!parsed.ok) throw validationError(parsed.issues);
  const shape = schemaDocumentSchema.safeParse(raw);
  if (!shape.success) throw validationError(toIssues(shape.error));
  const { action } = c.req.valid("param");
  const schema = await ledgerOf(c.env, projectId).putSchema(action, parsed.document, auditActor(credential), requestContext(c.req.raw));
  if (schema === "too_many") throw validationError([{ path: "", message: `a project has schemas for at most ${MAX_SCHEMAS} actions` }]);
  forgetCatalog(projectId);
  return c.json({ data: schema }, 201);
});

documented(schemas, createRoute({
  method: "get", path: "/", tags: ["Catalog"], operationId: "listSchemas", summary: "Every action with a schema, newest version each", security: READ.security,
  request: { query: schemaListQuery },
  responses: { 200: json(schemaPageSchema, "A page of schemas, in action order"), ...errors(...AUTH_ERRORS, "VALIDATION_ERROR") },
}));
schemas.get("/", READ.guard, validate("query", schemaListQuery), async (c) => {
  const { limit, cursor } = c.req.valid("query");
  const page = await ledgerOf(c.env, projectOf(c.get("credential"))).schemaList(cursor ?? null, limit + 1);
  const more = page.length > limit;
  const shown = more ? page.slice(0, limit) : page;
  return c.json({ data: shown, nextCursor: more ? encodeSchemaCursor(shown[shown.length - 1].action) : null });
});

documented(schemas, createRoute({
  method: "get", path: "/{action}", tags: ["Catalog"], operationId: "getSchema", summary: "An action's newest schema, with its versions", security: READ.security,
  request: { params: actionParam },
  responses: { 200: json(schemaDetailSchema, "The newest version and the list of every version"), ...errors(...AUTH_ERRORS, "VALIDATION_ERROR", "NOT_FOUND") },
}));
schemas.get("/:action", READ.guard, validate("param", actionParam), async (c) => {
  const { action } = c.req.valid("param");
  const ledger = ledgerOf(c.env, projectOf(c.get("credential")));
  const [schema, versions] = await Promise.all([ledger.schemaVersion(action), ledger.schemaVersions(action)]);
  if (!schema) throw new ApiError("NOT_FOUND", "This action has no schema in this project's catalog");
  return c.json({ data: { ...schema, versions } });
});

documented(schemas, createRoute({
  method: "get", path: "/{action}/versions/{version}", tags: ["Catalog"], operationId: "getSchemaVersion", summary: "One version of an action's schema", security: READ.security,
  request: { params: versionParam },
  responses: { 200: json(schemaResponseSchema, "The version"), ...errors(...AUTH_ERRORS, "VALIDATION_ERROR", "NOT_FOUND") },
}));
schemas.get("/:action/versions/:version", READ.guard, validate("param", versionParam), async (c) => {
  const { action, version } = c.req.valid("param");
  const schema = await ledgerOf(c.env, projectOf(c.get("credential"))).schemaVersion(action, version);
  if (!schema) throw new ApiError("NOT_FOUND", `This action has no schema version ${version} in this project's catalog`);
  return c.json({ data: schema });
});

documented(catalogSettings, createRoute({
  method: "get", path: "/settings", tags: ["Catalog"], operationId: "getCatalogSettings", summary: "How ingest checks events against the catalog", security: READ.security,
  responses: { 200: json(catalogSettingsResponse, "The settings (mode off until changed)"), ...errors(...AUTH_ERRORS) },
}));
catalogSettings.get("/settings", READ.guard, async (c) => c.json({ data: await ledgerOf(c.env, projectOf(c.get("credential"))).catalogSettings() }));

documented(catalogSettings, createRoute({
  method: "put", path: "/settings", tags: ["Catalog"], operationId: "putCatalogSettings", summary: "Choose how ingest checks events against the catalog", security: ADMIN.security,
  description:
    "off (the default): nothing is checked. warn: every event is stored, checked against its action's newest schema (or the `version` it sends) and says so in " +
    "schema_version and schema_valid, inside its hash. enforce: an event that breaks its schema is refused with 400 VALIDATION_ERROR naming each path " +
    "(in a batch nothing is stored), and with unknown_actions reject so is one whose action has no schema. Recorded as witness.catalog.changed.",
  request: { body: { required: true, content: { "application/json": { schema: catalogSettingsSchema } } } },
  responses: { 200: json(catalogSettingsResponse, "The settings now in force"), ...errors(...AUTH_ERRORS, "VALIDATION_ERROR", "UNSUPPORTED_MEDIA_TYPE", "EVENT_TOO_LARGE") },
}));
catalogSettings.put("/settings", ADMIN.guard, async (c) => {
  const credential = c.get("credential");
  const parsed = catalogSettingsSchema.safeParse(await readJsonObject(c));
  if (!parsed.success) throw validationError(toIssues(parsed.error));
  const projectId = projectOf(credential);
  const { settings } = await ledgerOf(c.env, projectId).putCatalogSettings(parsed.data, auditActor(credential), requestContext(c.req.raw));
  forgetCatalog(projectId);
  return c.json({ data: settings });
});
