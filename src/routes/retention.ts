import { createRoute } from "@hono/zod-openapi";
import { ledgerOf } from "../chain/ledger";
import { ApiError } from "../lib/errors";
import { readJsonObject } from "../lib/request-body";
import { toIssues, validationError } from "../lib/validate";
import { access, auditActor, projectOf } from "../middleware/credential";
import { retentionPlanSchema, retentionStateSchema } from "../schemas/retention";
import { AUTH_ERRORS, documented, errors, json, router } from "../middleware/openapi";
import { requestContext } from "../middleware/ingest";

/**
 * The project's retention plan. It lives in the project's ledger, so only a
 * request with the project's API key can change what the daily purge deletes;
 * a rule written into D1 alone purges nothing. A locked plan may only keep
 * events longer; the ledger refuses anything else (src/chain/retention-lock.ts).
 */
const retention = router();
const READ = access("read");
const ADMIN = access("admin");

documented(retention, createRoute({
  method: "get", path: "/", tags: ["Retention"], operationId: "getRetention", summary: "The project's retention plan and its lock", security: READ.security,
  responses: { 200: json(retentionStateSchema, "The plan's rules, in the order they apply, and whether it is locked"), ...errors(...AUTH_ERRORS) },
}));
retention.get("/", READ.guard, async (c) => {
  return c.json({ data: await ledgerOf(c.env, projectOf(c.get("credential"))).retentionState() });
});

documented(retention, createRoute({
  method: "put", path: "/", tags: ["Retention"], operationId: "setRetention", summary: "Replace the retention plan (lock: true locks it for good)", security: ADMIN.security,
  description:
    "Once locked, a plan may only keep events longer: dropping a locked rule, keeping any action fewer days (a shorter rule, or a new, more specific one), " +
    "or lock: false is 409 RETENTION_LOCKED, and the plan stays as it was. There is no unlock. Recorded in the chain as witness.retention.changed.",
  request: { body: { required: true, content: { "application/json": { schema: retentionPlanSchema.meta({ id: "RetentionPlan" }) } } } },
  responses: {
    200: json(retentionStateSchema, "The new plan"),
    ...errors(...AUTH_ERRORS, "VALIDATION_ERROR", "UNSUPPORTED_MEDIA_TYPE", "EVENT_TOO_LARGE", "RETENTION_LOCKED"),
  },
}));
retention.put("/", ADMIN.guard, async (c) => {
  const credential = c.get("credential");
  const parsed = retentionPlanSchema.safeParse(await readJsonObject(c));
  if (!parsed.success) throw validationError(toIssues(parsed.error));
  const change = await ledgerOf(c.env, projectOf(credential)).setRetention(parsed.data, auditActor(credential), requestContext(c.req.raw));
  if (change.status === "locked") throw new ApiError("RETENTION_LOCKED", change.message, change.check);
  const { status: _, ...state } = change;
  return c.json({ data: state });
});

export default retention;
