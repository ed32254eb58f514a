import type { Context } from "hono";
import { createRoute } from "@hono/zod-openapi";
import { ledgerOf } from "../chain/ledger";
import { ApiError } from "../lib/errors";
import { validate, validationError } from "../lib/validate";
import { publicLogUrl } from "../log/log-identity";
import { access, projectOf } from "../middleware/credential";
import { consistencyQuery, logConsistencySchema, logInfoSchema } from "../schemas/log";
import { archivedEvent } from "../storage/archive-lookup";
import { orArchiveDamaged } from "./receipts";
import { eventsDb } from "../storage/shards";
import type { AppEnv } from "../middleware/app-env";
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

/**
 * GET /v1/events/:id/proof (mounted in routes/events.ts): the event's
 * inclusion proof as c2sp.org/tlog-proof@v1 text against the newest checkpoint.
 * Archiving never changes a leaf: an event in the cold tier has its proof too.
 */
export async function eventProof(c: Context<AppEnv>) {
  const projectId = projectOf(c.get("credential"));
  const id = c.req.param("id") ?? "";
  const db = await eventsDb(c.env, projectId);
  const hot = await db.prepare("SELECT seq FROM events WHERE id = ? AND project_id = ?").bind(id, projectId).first<{ seq: number }>();
  const row = hot ?? (await orArchiveDamaged(archivedEvent(c.env, db, projectId, id)));
  if (!row) throw new ApiError("NOT_FOUND", "No event with that id in this project");
  const ledger = ledgerOf(c.env, projectId);
  const proof = await ledger.logInclusion(row.seq);
  if (!proof) throw logNotReady(await ledger.logInfo());
  c.header("Cache-Control", "no-store");
  return c.json({ data: proof });
}

function logNotReady(info: { status: string; built_size: number; head_seq: number; blocked: unknown }): ApiError {
  const why =
    info.status === "building"
      ? `the project's transparency log is being built (${info.built_size} of ${info.head_seq} events); retry shortly`
      : "the project's transparency log cannot be built (see GET /v1/log)";
  return new ApiError("LOG_NOT_READY", `This event is not in the transparency log: ${why}`, {
    status: info.status,
    built_size: info.built_size,
    head_seq: info.head_seq,
    blocked: info.blocked,
  });
}

export default log;
