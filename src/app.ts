import { createRoute } from "@hono/zod-openapi";
import type { ErrorHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import { requestId } from "hono/request-id";
import { ApiError, errorBody } from "./lib/errors";
import { databaseRefusal, isOverloaded, OVERLOADED_RETRY_AFTER } from "./lib/database-refusal";
import { INDEXING_BEHIND } from "./storage/own-writes";
import type { AppEnv } from "./middleware/app-env";
import { documented, errors, json, router } from "./middleware/openapi";
import { serviceInfoSchema } from "./schemas/responses";
import { apiDocs } from "./routes/docs";
import { portalRoutesOnly, resolveCredential } from "./middleware/credential";
import { embedReadCors, embedReadsOnly } from "./middleware/embed-scope";
import { rateLimit, rateLimitHeaders } from "./middleware/rate-limit";
import actors from "./routes/actors";
import { embedAssets, embedTokens } from "./routes/embed";
import events from "./routes/events";
import exports from "./routes/exports";
import log from "./routes/log";
import logs from "./routes/logs";
import meter from "./routes/meter";
import { receiptPages, receipts } from "./routes/receipts";
import { landingResponse, orHtml, publicAssets } from "./routes/public-pages";
import { wantsHtml } from "./pages/public/negotiate";
import keys from "./routes/keys";
import jobs from "./routes/jobs";
import legalHolds from "./routes/legal-holds";
import projectMove from "./routes/project-move";
import projectRestore from "./routes/project-restore";
import retention from "./routes/retention";
import streams from "./routes/streams";
import stats from "./routes/stats";
import actions from "./routes/actions";
import { catalogSettings, schemas } from "./routes/schemas";
import alerts from "./routes/alerts";
import { mountConsole } from "./routes/console";
import portal from "./routes/portal";
import { TILE_REFUSED } from "./log/log-store";
import { mountPortal } from "./routes/portal-pages";
import { manageRoutes } from "./routes/console-manage";
import { catalogRoutes } from "./routes/console-catalog";
import { alertRoutes } from "./routes/console-alerts";
import { investigateRoutes } from "./routes/console-investigate";
import wellKnown from "./routes/well-known";

const app = router();

// Order matters: headers are written last, so they land on every response,
// errors included; the limiter runs before any API-key lookup (it resolves
// ingest's key itself, since ingest is limited per key), so a refused or
// random-key burst never reaches D1.
app.use("*", requestId());
app.use("*", rateLimitHeaders);
// Before the credential and the limiter: preflights end here, and 401/429 still carry CORS.
app.use("/v1/*", embedReadCors);
app.use("*", rateLimit);
app.use("/v1/*", resolveCredential);
app.use("/v1/*", embedReadsOnly);
app.use("/v1/*", portalRoutesOnly);

documented(app, createRoute({
  method: "get", path: "/", tags: ["Public"], operationId: "getService", summary: "What this is", security: [],
  description: "JSON for API clients; a browser (Accept preferring text/html) gets the landing page.",
  responses: { 200: orHtml(json(serviceInfoSchema, "The service's name and where to read on")), ...errors() },
}));
app.get("/", (c) => {
  if (wantsHtml(c.req.header("Accept"))) return landingResponse(c);
  c.header("Vary", "Accept");
  return c.json({ data: { service: "witness", docs: "/docs", api: "/v1" } });
});
apiDocs(app);
app.route("/v1/events", events);
app.route("/v1/exports", exports);
app.route("/v1/receipts", receipts);
app.route("/receipts", receiptPages);
app.route("/.well-known", wellKnown);
app.route("/v1/log", log);
// Public, like /receipts: outside /v1, so no credential is asked for; the per-IP limit applies.
app.route("/logs", logs);
app.route("/v1/actors", actors);
app.route("/v1/retention", retention);
app.route("/v1/legal-holds", legalHolds);
app.route("/v1/streams", streams);
app.route("/v1/project", projectMove);
app.route("/v1/project", projectRestore);
app.route("/v1/keys", keys);
app.route("/v1/jobs", jobs);
app.route("/v1/stats", stats);
app.route("/v1/actions", actions);
app.route("/v1/schemas", schemas);
app.route("/v1/catalog", catalogSettings);
app.route("/v1/alerts", alerts);
app.route("/v1/portal", portal);
// The web console (HTML, not API operations): its pages call /v1 in-process as the signed-in key.
mountConsole(app, manageRoutes, catalogRoutes, alertRoutes, investigateRoutes);
// The customers' admin portal (HTML): its pages call /v1 in-process as the portal session.
mountPortal(app);
app.route("/v1/embed", embedTokens);
app.route("/embed", embedAssets);
// The public pages' stylesheet and script (src/pages/public).
app.route("/assets/public", publicAssets);
// Only where METER = "enforce" (tests, benches): the invocation meter's report; 404 elsewhere.
app.route("/__meter", meter);

app.notFound(() => {
  throw new ApiError("NOT_FOUND", "No such route");
});

/**
 * What refused a request for now, and when to come back; null for a real fault. A refusal stored nothing; a read
 * that waited too long for its project's backlog (`storedNothing: false`) was behind appends that were stored.
 */
function retryLater(err: unknown): { reason: string; retryAfter: number; what: string; storedNothing: boolean } | null {
  if (isOverloaded(err)) {
    return {
      reason: "overloaded",
      retryAfter: OVERLOADED_RETRY_AFTER,
      what: "A Durable Object this request needs (the project's ledger, most often) is overloaded and refused it",
      storedNothing: true,
    };
  }
  if (err instanceof Error && err.message.startsWith(INDEXING_BEHIND)) {
    // A read that waited for the project's ledger to index what it answered ahead of a lagging shard (storage/own-writes.ts).
    return { reason: "indexing_behind", retryAfter: OVERLOADED_RETRY_AFTER, what: `${INDEXING_BEHIND}, behind a slow database`, storedNothing: false };
  }
  const refusal = databaseRefusal(err);
  if (!refusal) return null;
  const what =
    refusal.reason === "storage_full"
      ? "The database holding this project's events is full and is freeing space by archiving"
      : "The database holding this project's events is overloaded";
  return { ...refusal, what, storedNothing: true };
}

/** The one error handler: every failure becomes the envelope (exported for the test of what only Cloudflare's runtime throws). */
export const answerError: ErrorHandler<AppEnv> = (err, c) => {
  if (err instanceof ApiError) return c.json(errorBody(err.code, err.message, err.details), err.status);
  if (err instanceof HTTPException && err.status < 500) {
    const code = err.status === 401 ? "UNAUTHORIZED" : err.status === 404 ? "NOT_FOUND" : "VALIDATION_ERROR";
    return c.json(errorBody(code, err.message || "Bad request"), err.status);
  }
  // A full log tile moved to R2 whose object is missing or altered (src/log/log-store.ts): an integrity fault for the operator, never a retryable 500.
  if (err instanceof Error && err.message.includes(TILE_REFUSED)) {
    console.error(`[${c.get("requestId")}]`, err.message);
    return c.json(
      errorBody("ARCHIVE_DAMAGED", "A part of this project's transparency log kept in object storage is missing or altered, so this proof or tile cannot be served; retrying will not help until it is restored"),
      410,
    );
  }
  // Refusals that mean "not now": the request stored nothing, and retrying at once would only add to the load, so the
  // client is told when to come back. Cloudflare's runtime refuses a call to a Durable Object whose inbox is too long
  // (`.overloaded`) before the call reaches it; D1 refuses a full or overloaded database (lib/database-refusal.ts).
  const later = retryLater(err);
  if (later) {
    console.warn(`[${c.get("requestId")}] refused for now (${later.reason}): ${(err as Error).message}`);
    c.header("Retry-After", String(later.retryAfter));
    return c.json(
      errorBody("RATE_LIMITED", `${later.what}; ${later.storedNothing ? "nothing was stored, " : ""}retry in ${later.retryAfter} s`, { reason: later.reason, retry_after: later.retryAfter }),
      429,
    );
  }
  // Only 5xx are logged; the client never sees internals.
  console.error(`[${c.get("requestId")}]`, err);
  return c.json(
    errorBody("INTERNAL_ERROR", "Something went wrong on our side; the request stored nothing and is safe to retry", {
      request_id: c.get("requestId"),
    }),
    500,
  );
};

app.onError(answerError);

export default app;
