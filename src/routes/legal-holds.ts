import { createRoute } from "@hono/zod-openapi";
import { ledgerOf } from "../chain/ledger";
import { MAX_ACTIVE_HOLDS } from "../chain/legal-holds";
import { ApiError } from "../lib/errors";
import { AUTH_ERRORS, documented, errors, json, router } from "../middleware/openapi";
import { readJsonObject } from "../lib/request-body";
import { toIssues, validate, validationError } from "../lib/validate";
import { access, auditActor, projectOf } from "../middleware/credential";
import { holdParamSchema, legalHoldListSchema, legalHoldResponseSchema, placeHoldSchema } from "../schemas/legal-holds";
import { requestContext } from "../middleware/ingest";

/**
 * Legal holds: events of an organization, an actor, or that actor in that
 * organization, kept whatever the retention plan says and never erased while
 * the hold is in force. They live in the project's ledger, which checks them
 * on every purge and erasure; placing and releasing one is recorded in the
 * chain (its organization and whether it names an actor, never who).
 */
const legalHolds = router();
const READ = access("read");
const ADMIN = access("admin");

documented(legalHolds, createRoute({
  method: "post", path: "/", tags: ["Legal holds"], operationId: "placeLegalHold", summary: "Place a legal hold", security: ADMIN.security,
  description:
    "Held events are never purged by retention, and erasing a held actor is 409 LEGAL_HOLD. Name an organization, an actor_id, or both; a reason is required. " +
    `At most ${MAX_ACTIVE_HOLDS} holds in force per project. Recorded in the chain as witness.legal_hold.placed.`,
  request: { body: { required: true, content: { "application/json": { schema: placeHoldSchema.meta({ id: "LegalHoldRequest" }) } } } },
  responses: { 201: json(legalHoldResponseSchema, "The hold, in force"), ...errors(...AUTH_ERRORS, "VALIDATION_ERROR", "UNSUPPORTED_MEDIA_TYPE", "EVENT_TOO_LARGE") },
}));
legalHolds.post("/", ADMIN.guard, async (c) => {
  const credential = c.get("credential");
  const parsed = placeHoldSchema.safeParse(await readJsonObject(c));
  if (!parsed.success) throw validationError(toIssues(parsed.error));
  const { organization = null, actor_id = null, reason } = parsed.data;
  const hold = await ledgerOf(c.env, projectOf(credential)).placeLegalHold({ organization, actor_id, reason }, auditActor(credential), requestContext(c.req.raw));
  if (!hold) throw validationError([{ path: "", message: `a project has at most ${MAX_ACTIVE_HOLDS} legal holds in force; release one first` }]);
  return c.json({ data: hold }, 201);
});

documented(legalHolds, createRoute({
  method: "get", path: "/", tags: ["Legal holds"], operationId: "listLegalHolds", summary: "The project's legal holds", security: READ.security,
  responses: { 200: json(legalHoldListSchema, "Every hold, newest first; released ones have released_at"), ...errors(...AUTH_ERRORS) },
}));
legalHolds.get("/", READ.guard, async (c) => c.json({ data: await ledgerOf(c.env, projectOf(c.get("credential"))).legalHolds() }));

documented(legalHolds, createRoute({
  method: "delete", path: "/{id}", tags: ["Legal holds"], operationId: "releaseLegalHold", summary: "Release a legal hold", security: ADMIN.security,
  description: "Its events follow the retention plan again from the next purge. Releasing a released hold answers it unchanged. Recorded as witness.legal_hold.released.",
  request: { params: holdParamSchema },
  responses: { 200: json(legalHoldResponseSchema, "The released hold"), ...errors(...AUTH_ERRORS, "NOT_FOUND") },
}));
legalHolds.delete("/:id", ADMIN.guard, validate("param", holdParamSchema), async (c) => {
  const credential = c.get("credential");
  const released = await ledgerOf(c.env, projectOf(credential)).releaseLegalHold(c.req.valid("param").id, auditActor(credential), requestContext(c.req.raw));
  if (!released) throw new ApiError("NOT_FOUND", "No legal hold with that id in this project");
  return c.json({ data: released.hold });
});

export default legalHolds;
