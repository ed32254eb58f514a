import { createRoute } from "@hono/zod-openapi";
import { ledgerOf } from "../chain/ledger";
import { validate, validationError } from "../lib/validate";
import { publicLogUrl } from "../log/log-identity";
import { access, projectOf } from "../middleware/credential";
import { consistencyQuery, logConsistencySchema, logInfoSchema } from "../schemas/log";
import { AUTH_ERRORS, documented, errors, json, router } from "../middleware/openapi";

/** The key's project's transparency log: identity, newest checkpoint, proofs. API keys only. */
const log = router();
const READ = access("read");

documented(log, createRoute({
  method: "get", path: "/", tags: ["Transparency log"], operationId: "getLog", summary: "The project's transparency log", security: READ.security,
  responses: { 200: json(logInfoSchema, "Identity, newest checkpoint and build status"), ...errors(...AUTH_ERRORS) },
}));
log.get("/", READ.guard, async (c) => {
  const info = await ledgerOf(c.env, projectOf(c.get("credential"))).logInfo();
  c.header("Cache-Control", "no-store");
  const { log_id, origin, vkey, tree_size, root_hash, checkpoint, status, built_size, head_seq, blocked } = info;
  const public_url = publicLogUrl(new URL(c.req.url).origin, log_id);
  return c.json({ data: { log_id, origin, vkey, public_url, tree_size, root_hash, checkpoint, status, built_size, head_seq, blocked } });
});

documented(log, createRoute({
  method: "get", path: "/consistency", tags: ["Transparency log"], operationId: "getLogConsistency", summary: "A consistency proof between two tree sizes", security: READ.security,
  request: { query: consistencyQuery },
  responses: { 200: json(logConsistencySchema, "The consistency proof"), ...errors(...AUTH_ERRORS, "VALIDATION_ERROR") },
}));
log.get("/consistency", READ.guard, validate("query", consistencyQuery), async (c) => {
  const { from, to } = c.req.valid("query");
  const ledger = ledgerOf(c.env, projectOf(c.get("credential")));
  const proof = await ledger.logConsistency(from, to);
  if (!proof) {
    const { tree_size } = await ledger.logInfo();
    const path = to !== undefined && to > tree_size ? "to" : "from";
    throw validationError([{ path, message: `${path} must not exceed the tree size, ${tree_size}` }]);
  }
  return c.json({ data: proof });
});

export default log;
