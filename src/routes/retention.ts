import { Hono } from "hono";
import { ledgerOf } from "../chain/ledger";
import { orderRules } from "../chain/retention-rules";
import { readJsonObject } from "../lib/request-body";
import { toIssues, validationError } from "../lib/validate";
import { projectOf, requireCredential } from "../middleware/credential";
import { retentionPlanSchema } from "../schemas/retention";
import type { AppEnv } from "../types";

/**
 * The project's retention plan. It lives in the project's ledger, so only a
 * request with the project's API key can change what the daily purge deletes;
 * a rule written into D1 alone purges nothing.
 */
const retention = new Hono<AppEnv>();
const apiKeyOnly = requireCredential({ allowEmbed: false });

retention.get("/", apiKeyOnly, async (c) => {
  const rules = await ledgerOf(c.env, projectOf(c.get("credential"))).retention();
  return c.json({ data: { rules: orderRules(rules) } });
});

retention.put("/", apiKeyOnly, async (c) => {
  const parsed = retentionPlanSchema.safeParse(await readJsonObject(c));
  if (!parsed.success) throw validationError(toIssues(parsed.error));
  const rules = await ledgerOf(c.env, projectOf(c.get("credential"))).setRetention(parsed.data.rules);
  return c.json({ data: { rules: orderRules(rules) } });
});

export default retention;
