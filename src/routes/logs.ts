import type { Context } from "hono";
import { createRoute, z } from "@hono/zod-openapi";
import { documented, errors, router } from "../lib/openapi";
import { ledgerOf } from "../chain/ledger";
import { forgetLogAddress, projectOfLog, tileObjectKey } from "../log/log-directory";
import { checkedCopy, keepCopy } from "../log/published-tiles";
import { TILE_WIDTH, parseTilePath } from "../log/tiles";
import type { AppEnv } from "../types";
import { mountLogPage } from "./public-pages";

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
documented(logs, createRoute({
  method: "get", path: "/{logId}/tile/{tile}", tags: ["Public"], operationId: "getLogTile", summary: "A tile of the log (c2sp.org/tlog-tiles)", security: [],
  description: "tile is several path segments: <L>/<N>[.p/<W>], as c2sp.org/tlog-tiles spells it (e.g. 0/x001/234.p/5).",
  request: { params: logParam.extend({ tile: z.string().meta({ description: "<L>/<N>[.p/<W>]; slashes are not escaped" }) }) },
  responses: {
    200: { description: "The tile's hashes", content: { "application/octet-stream": { schema: z.string().meta({ format: "binary" }) } } },
    400: plainText("Malformed tile path"),
    404: plainText("Unknown log or tile"),
    ...errors(),
  },
}));

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
  const path = c.req.path.slice(`/logs/${logId}/`.length);
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

// The log's address itself: a page for browsers (src/pages/public), "not found" as before for everyone else.
mountLogPage(logs, (c) => plain(c, 404, "not found"));
logs.all("*", (c) => plain(c, 404, "not found"));

export default logs;
