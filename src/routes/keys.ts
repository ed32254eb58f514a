import { createRoute, z } from "@hono/zod-openapi";
import { createKey, listKeys, markKeyAudited, revokeKey } from "../auth/key-store";
import { grants } from "../auth/scopes";
import { recordAdminAction } from "../chain/self-audit";
import { ApiError } from "../lib/errors";
import { AUTH_ERRORS, documented, errors, json, router } from "../middleware/openapi";
import { readJsonObject } from "../lib/request-body";
import { toIssues, validationError } from "../lib/validate";
import { access, auditActor, projectOf } from "../middleware/credential";
import { createKeySchema, keyCreatedSchema, keyListSchema, keyRevokedSchema } from "../schemas/keys";
import { requestContext } from "../middleware/ingest";

/**
 * The project's API keys, for admins: mint one per use with only the scopes it
 * needs (an application's servers hold an ingest key), list them, revoke
 * them. Each creation and revocation is recorded in the project's chain.
 */
const keys = router();
const ADMIN = access("admin");
const BODY_ERRORS = ["VALIDATION_ERROR", "UNSUPPORTED_MEDIA_TYPE", "EVENT_TOO_LARGE"] as const;

documented(keys, createRoute({
  method: "post", path: "/", tags: ["Keys"], operationId: "createKey", summary: "Create an API key with some scopes", security: ADMIN.security,
  description: "The whole key is in this answer only. A key never gets a scope its maker lacks. Recorded in the chain as witness.key.created.",
  request: { body: { required: true, content: { "application/json": { schema: createKeySchema.meta({ id: "ApiKeyCreateRequest" }) } } } },
  responses: { 201: json(keyCreatedSchema, "The new key, shown this once"), ...errors(...AUTH_ERRORS, ...BODY_ERRORS) },
}));
keys.post("/", ADMIN.guard, async (c) => {
  const credential = c.get("credential")!;
  const parsed = createKeySchema.safeParse(await readJsonObject(c));
  if (!parsed.success) throw validationError(toIssues(parsed.error));
  const { scopes, label = null, expires_at = null } = parsed.data;
  // Only admins get here and admin holds every scope; the rule stands on its own should that change.
  const held = credential.kind === "api_key" ? credential.scopes : [];
  const beyond = scopes.filter((s) => !grants(held, s));
  if (beyond.length > 0) throw new ApiError("FORBIDDEN", `A key cannot mint scopes it lacks: ${beyond.join(", ")}`, { required_scope: beyond[0] });
  const projectId = projectOf(credential);
  const created = await createKey(c.env, projectId, { scopes, label, expires_at, created_by: auditActor(credential).id });
  await recordAdminAction(c.env, projectId, {
    action: "witness.key.created",
    actor: auditActor(credential),
    targets: [{ type: "api_key", id: created.prefix, name: label }],
    metadata: { scopes: created.scopes, expires_at },
  }, requestContext(c.req.raw));
  await markKeyAudited(c.env, created.prefix, "created");
  return c.json({ data: created }, 201);
});

documented(keys, createRoute({
  method: "get", path: "/", tags: ["Keys"], operationId: "listKeys", summary: "The project's API keys (never their secrets)", security: ADMIN.security,
  responses: { 200: json(keyListSchema, "Every key, newest first, revoked ones included"), ...errors(...AUTH_ERRORS) },
}));
keys.get("/", ADMIN.guard, async (c) => c.json({ data: await listKeys(c.env, projectOf(c.get("credential"))) }));

const prefixParam = z.object({ prefix: z.string().meta({ description: "The key's prefix (GET /v1/keys)" }) });
documented(keys, createRoute({
  method: "delete", path: "/{prefix}", tags: ["Keys"], operationId: "revokeKey", summary: "Revoke an API key", security: ADMIN.security,
  description: "It stops working here at once and everywhere within 10 seconds; embed tokens it minted stop with it. Recorded as witness.key.revoked.",
  request: { params: prefixParam },
  responses: { 200: json(keyRevokedSchema, "The revoked key"), ...errors(...AUTH_ERRORS, "NOT_FOUND") },
}));
keys.delete("/:prefix", ADMIN.guard, async (c) => {
  const credential = c.get("credential")!;
  const projectId = projectOf(credential);
  const revoked = await revokeKey(c.env, projectId, c.req.param("prefix"));
  if (!revoked) throw new ApiError("NOT_FOUND", "No key with that prefix in this project");
  if (!revoked.already) {
    const target = [{ type: "api_key", id: revoked.key.prefix, name: revoked.key.label }];
    // A key an operator script made is recorded by the daily sweep; revoked before that, it is recorded here first.
    if (!revoked.createdRecorded) {
      await recordAdminAction(c.env, projectId, {
        action: "witness.key.created",
        actor: { type: "operator", id: "operator-script" },
        targets: target,
        metadata: { scopes: revoked.key.scopes, created_at: revoked.key.created_at, expires_at: revoked.key.expires_at, recorded_by: "key revocation" },
      }, requestContext(c.req.raw));
    }
    await recordAdminAction(c.env, projectId, {
      action: "witness.key.revoked",
      actor: auditActor(credential),
      targets: target,
      metadata: { scopes: revoked.key.scopes },
    }, requestContext(c.req.raw));
    await markKeyAudited(c.env, revoked.key.prefix, "revoked");
  }
  return c.json({ data: revoked.key });
});

export default keys;
