import { createRoute } from "@hono/zod-openapi";
import { ledgerOf } from "../chain/ledger";
import { AUTH_ERRORS, documented, errors, json, router } from "../middleware/openapi";
import { validate } from "../lib/validate";
import { access, projectOf } from "../middleware/credential";
import { activityParams, activityQuery, activitySchema } from "../schemas/stats";

/** Counts for charts, read from the rollups the ledger keeps at commit time (src/reads/rollups.ts), never from the events. */
const stats = router();
const READ = access("read");

documented(stats, createRoute({
  method: "get", path: "/activity", tags: ["Events"], operationId: "getActivity", summary: "Events per hour or day, by action", security: READ.security,
  description:
    "Counts of the events committed to the project per bucket of occurred_at (UTC), the range's busiest actions apart. " +
    "Read from per-project rollups kept at commit time: later purges and erasures do not change them.",
  request: { query: activityParams },
  responses: { 200: json(activitySchema, "Counts per bucket"), ...errors(...AUTH_ERRORS, "VALIDATION_ERROR") },
}));
stats.get("/activity", READ.guard, validate("query", activityQuery), async (c) => {
  const { from, to, bucket } = c.req.valid("query");
  c.header("Cache-Control", "no-store");
  return c.json({ data: await ledgerOf(c.env, projectOf(c.get("credential"))).activity(from, to, bucket) });
});

export default stats;
