import type { Context } from "hono";
import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import { documented, errors, router } from "../middleware/openapi";
import { ledgerOf } from "../chain/ledger";
import { forgetLogAddress, projectOfLog, tileObjectKey } from "../log/log-directory";
import { checkedCopy, keepCopy } from "../log/published-tiles";
import { TILE_WIDTH, parseTilePath } from "../tlog/tiles";
import type { AppEnv } from "../middleware/app-env";
import { logPage, unknownLogPage } from "../pages/public/log-page";
import { loadLogView } from "../pages/public/log-view";
import { wantsHtml } from "../pages/public/negotiate";
import { htmlResponse } from "../pages/public/layout";

/**
 * Public tlog-tiles endpoints, /logs/<log_id>/checkpoint and /tile/..., for
 * anyone holding the log's address: no credential, hashes and sizes only,
 * never event content. Errors are short plain text, as static log servers
 * answer, so tlog clients need no JSON parsing; every answer is one of
 * 200, 400 or 404 (503 only when no signing key is configured).
 */
const logs = router();

const plainText = (description: string) => ({ description, content: { "text/plain": { schema: z.string() } } });
const logParam = z.object({ logId: z.string().meta({ description: "The log id, from GET /v1/log" }) });
documented(logs, createRoute({
  method: "get", path: "/{logId}/checkpoint", tags: ["Public"], operationId: "getLogCheckpoint", summary: "The newest signed checkpoint (c2sp.org/tlog-tiles)", security: [],
  request: { params: logParam },
  responses: { 200: plainText("A signed note, witness cosignatures appended"), 404: plainText("Unknown log"), 503: plainText("No checkpoint signing key is configured"), ...errors() },
}));
// A tile path has a variable number of segments (the index is x001/x234/067 past 999), which no
// OpenAPI path template can hold; so the document names one parameter per segment it can, and the
// index as one parameter. A client that follows the document percent-encodes it (x001%2F234): the
// handler below takes that spelling as well as C2SP's raw slashes.
const tileParams = logParam.extend({
  level: z.int().min(0).max(63).meta({ description: "<L>: the tile's level, 0 to 63, no leading zeros" }),
  index: z
    .string()
    .regex(/^(?:x[0-9]{3}[/])*[0-9]{3}$/)
    .meta({
      description:
        "<N>: the tile's index in three-digit groups, all but the last prefixed with x (1234067 is x001/x234/067). " +
        "Sent raw (x001/x234/067) or percent-encoded (x001%2Fx234%2F067); both are served.",
      example: "000",
    }),
});
const tileResponses = (what: string) => ({
  200: { description: what, content: { "application/octet-stream": { schema: z.string().meta({ format: "binary" }) } } },
  400: plainText("Malformed tile path"),
  404: plainText("Unknown log or tile; also every entry bundle (tile/entries/<N>[.p/<W>]): this log publishes hashes, never event content"),
  ...errors(),
});
documented(logs, createRoute({
  method: "get", path: "/{logId}/tile/{level}/{index}", tags: ["Public"], operationId: "getLogTile", summary: "A full tile of the log (c2sp.org/tlog-tiles)", security: [],
  description: "tile/<L>/<N>: 256 hashes of 32 bytes, immutable once published.",
  request: { params: tileParams },
  responses: tileResponses("The tile's 256 hashes"),
}));
documented(logs, createRoute({
  method: "get", path: "/{logId}/tile/{level}/{index}.p/{width}", tags: ["Public"], operationId: "getLogPartialTile", summary: "A partial tile of the log (c2sp.org/tlog-tiles)", security: [],
  description: "tile/<L>/<N>.p/<W>: the first W hashes of a tile the tree has not filled yet.",
  request: { params: tileParams.extend({ width: z.int().min(1).max(255).meta({ description: "<W>: how many hashes, 1 to 255" }) }) },
  responses: tileResponses("The tile's first W hashes"),
}));

const ENTRIES = "tile/entries/";
const IMMUTABLE = "public, max-age=31536000, immutable";
/** The checkpoint and partial tiles change as the log grows: a client must see a new one within seconds. */
const FRESH = "public, max-age=2";

function plain(c: Context<AppEnv>, status: 400 | 404 | 503, message: string) {
  return c.text(`${message}\n`, status, { "Cache-Control": "no-store", "Access-Control-Allow-Origin": "*" });
}

function binary(c: Context<AppEnv>, bytes: ArrayBuffer | Uint8Array, cache: string) {
  return c.body(bytes as ArrayBuffer, 200, {
    "Content-Type": "application/octet-stream",
    "Cache-Control": cache,
    "Access-Control-Allow-Origin": "*",
    "X-Content-Type-Options": "nosniff",
  });
}

/** The ledger the control database names for `logId` said that is not its log: 404, and ask the database again next time. */
function notThisLog(c: Context<AppEnv>, logId: string) {
  forgetLogAddress(logId);
  return plain(c, 404, "unknown log");
}

logs.get("/:logId/checkpoint", async (c) => {
  const logId = c.req.param("logId");
  const projectId = await projectOfLog(c.env, logId);
  if (!projectId) return plain(c, 404, "unknown log");
  const { mine, note } = await ledgerOf(c.env, projectId).logCheckpoint(logId);
  if (!mine) return notThisLog(c, logId);
  if (note === null) return plain(c, 503, "this deployment has no checkpoint signing key");
  return c.text(note, 200, {
    "Content-Type": "text/plain; charset=utf-8",
    "Cache-Control": FRESH,
    "Access-Control-Allow-Origin": "*",
    "X-Content-Type-Options": "nosniff",
  });
});

logs.get("/:logId/tile/*", async (c) => {
  const logId = c.req.param("logId");
  // Clients that follow the OpenAPI document percent-encode the index parameter: its slashes arrive as %2F.
  const path = c.req.path.slice(`/logs/${logId}/`.length).replace(/%2F/gi, "/");
  // C2SP entry bundles share the tiles' <N>[.p/<W>] grammar; a well-formed one is simply not here.
  if (path.startsWith(ENTRIES) && parseTilePath(`tile/0/${path.slice(ENTRIES.length)}`)) {
    return plain(c, 404, "no entry bundles: this log publishes hashes only, never event content");
  }
  const tile = parseTilePath(path);
  if (!tile) return plain(c, 400, "malformed tile path: tile/<L>/<N>[.p/<W>] as c2sp.org/tlog-tiles spells it");
  const full = tile.width === TILE_WIDTH;
  const key = tileObjectKey(logId, path);
  // A full tile never changes: its R2 copy is served once the ledger's digest of it is known and matches.
  const copy = full ? await checkedCopy(c.env.LOGS, key) : null;
  if (copy) return binary(c, copy, IMMUTABLE);
  const projectId = await projectOfLog(c.env, logId);
  if (!projectId) return plain(c, 404, "unknown log");
  const { mine, bytes } = await ledgerOf(c.env, projectId).logTile(logId, tile.level, tile.index, tile.width);
  if (!mine) return notThisLog(c, logId);
  if (!bytes) return plain(c, 404, "no such tile in this log");
  if (full) c.executionCtx.waitUntil(keepCopy(c.env.LOGS, key, bytes).catch(() => {}));
  return binary(c, bytes, full ? IMMUTABLE : FRESH);
});


/**
 * GET /logs/<log_id>: a page about the log for
 * a browser; every other client gets `fallback`, the answer it got before the
 * page existed. The C2SP paths below the address are untouched.
 */
function mountLogPage(logs: OpenAPIHono<AppEnv>, fallback: (c: Context<AppEnv>) => Response): void {
  documented(logs, createRoute({
    method: "get", path: "/{logId}", tags: ["Public"], operationId: "viewLog", summary: "The log's page (browsers); not found as plain text for other clients", security: [],
    description: "A browser (Accept preferring text/html) gets the log's size, checkpoint, cosignatures, verifier key and the log:monitor command.",
    request: { params: z.object({ logId: z.string().meta({ description: "The log id, from GET /v1/log" }) }) },
    responses: {
      200: { description: "The log's page", content: { "text/html": { schema: z.string() } } },
      404: { description: "Unknown log (a page for browsers), or any non-browser request", content: { "text/html": { schema: z.string() }, "text/plain": { schema: z.string() } } },
      ...errors(),
    },
  }));
  logs.get("/:logId", async (c) => {
    if (!wantsHtml(c.req.header("Accept"))) return fallback(c);
    const view = await loadLogView(c.env, c.req.param("logId"));
    if (view.kind === "unknown") return htmlResponse(c, unknownLogPage(), { status: 404, negotiated: true });
    return htmlResponse(c, logPage(view, new URL(c.req.url).origin), { negotiated: true });
  });
}

// The log's address itself: a page for browsers (src/pages/public), "not found" as before for everyone else.
mountLogPage(logs, (c) => plain(c, 404, "not found"));
logs.all("*", (c) => plain(c, 404, "not found"));

export default logs;
