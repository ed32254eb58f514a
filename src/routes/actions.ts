import { createRoute } from "@hono/zod-openapi";
import { ledgerOf } from "../chain/ledger";
import { validate } from "../lib/validate";
import { access, projectOf } from "../middleware/credential";
import { AUTH_ERRORS, documented, errors, json, router } from "../middleware/openapi";
import { actionPageSchema, actionsQuery, encodeActionCursor } from "../schemas/actions";

/** What the project records: its actions, read from the rollups the ledger keeps at commit time (src/reads/rollups.ts), never from the events. */
const actions = router();
const READ = access("read");

documented(actions, createRoute({
  method: "get", path: "/", tags: ["Events"], operationId: "listActions", summary: "Every action the project has recorded", security: READ.security,
  description:
    "Each action with how many events were recorded with it and the first and last hour (of occurred_at, UTC) it was seen in, " +
    "in name order. Read from per-project rollups kept at commit time: later purges and erasures do not change the counts.",
  request: { query: actionsQuery },
  responses: { 200: json(actionPageSchema, "A page of actions"), ...errors(...AUTH_ERRORS, "VALIDATION_ERROR") },
}));
actions.get("/", READ.guard, validate("query", actionsQuery), async (c) => {
  const { prefix, limit, cursor } = c.req.valid("query");
  const page = await ledgerOf(c.env, projectOf(c.get("credential"))).actions(prefix, cursor ?? null, limit + 1);
  const more = page.length > limit;
  const shown = more ? page.slice(0, limit) : page;
  c.header("Cache-Control", "no-store");
  return c.json({ data: shown, nextCursor: more ? encodeActionCursor(shown[shown.length - 1].action) : null });
});

export default actions;
