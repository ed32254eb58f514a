import { createRoute } from "@hono/zod-openapi";
import { ledgerOf } from "../chain/ledger";
import { orderRules } from "../chain/retention-rules";
import { readJsonObject } from "../lib/request-body";
import { toIssues, validationError } from "../lib/validate";
import { projectOf, requireCredential } from "../middleware/credential";
import { retentionPlanSchema } from "../schemas/retention";
import { API_KEY, AUTH_ERRORS, documented, errors, json, router } from "../lib/openapi";
import { retentionResponseSchema } from "../schemas/responses";

/**
 * The project's retention plan. It lives in the project's ledger, so only a
 * request with the project's API key can change what the daily purge deletes;
 * a rule written into D1 alone purges nothing.
 */
const retention = router();
const apiKeyOnly = requireCredential({ allowEmbed: false });

documented(retention, createRoute({
  method: "get", path: "/", tags: ["Retention"], operationId: "getRetention", summary: "The project's retention plan", security: API_KEY,
  responses: { 200: json(retentionResponseSchema, "The plan's rules"), ...errors(...AUTH_ERRORS) },
}));
retention.get("/", apiKeyOnly, async (c) => {
  const rules = await ledgerOf(c.env, projectOf(c.get("credential"))).retention();
  return c.json({ data: { rules: orderRules(rules) } });
});

documented(retention, createRoute({
  method: "put", path: "/", tags: ["Retention"], operationId: "setRetention", summary: "Replace the retention plan", security: API_KEY,
  request: { body: { required: true, content: { "application/json": { schema: retentionPlanSchema.meta({ id: "RetentionPlan" }) } } } },
  responses: { 200: json(retentionResponseSchema, "The new plan"), ...errors(...AUTH_ERRORS, "VALIDATION_ERROR", "UNSUPPORTED_MEDIA_TYPE", "EVENT_TOO_LARGE") },
}));
retention.put("/", apiKeyOnly, async (c) => {
  const parsed = retentionPlanSchema.safeParse(await readJsonObject(c));
  if (!parsed.success) throw validationError(toIssues(parsed.error));
  const rules = await ledgerOf(c.env, projectOf(c.get("credential"))).setRetention(parsed.data.rules);
  return c.json({ data: { rules: orderRules(rules) } });
});

export default retention;
