import { createRoute, z } from "@hono/zod-openapi";
import { selectionFor } from "../model/event-query";
import { exportFormat } from "../model/export-formats";
import { exportStream } from "../reads/export-stream";
import { validate } from "../lib/validate";
import { access } from "../middleware/credential";
import { projectWalk } from "../middleware/project-walk";
import { metadataParams, withMetadata } from "../middleware/metadata-filters";
import { exportQuerySchema } from "../schemas/list-query";
import { AUTH_ERRORS, documented, errors, router } from "../middleware/openapi";
import { eventSchema } from "../schemas/responses";

const exports = router();

const READ = access("read");

documented(exports, createRoute({
  method: "get", path: "/", tags: ["Exports"], operationId: "exportEvents", summary: "Stream every matching event as CSV or JSON", security: READ.security,
  request: { query: exportQuerySchema },
  responses: {
    200: {
      description: "A download (Content-Disposition: attachment), streamed",
      content: {
        "text/csv": { schema: z.string().meta({ description: "RFC 4180, CRLF rows, a header row" }) },
        "application/json": { schema: z.array(z.union([eventSchema, z.record(z.string(), z.unknown())])).meta({ description: "format=json: Event objects; format=ocsf: OCSF 1.3.0 events" }) },
      },
    },
    ...errors(...AUTH_ERRORS, "VALIDATION_ERROR"),
  },
}));

// The walk ends with the body: the export reads and stages while the client downloads.
exports.get("/", READ.guard, validate("query", exportQuerySchema), projectWalk({ untilBodyEnds: true }), async (c) => {
  const query = c.req.valid("query");
  const credential = c.get("credential")!;
  const format = exportFormat(query.format);
  const date = new Date().toISOString().slice(0, 10);
  const name = `witness-${credential.projectId.replace(/[^A-Za-z0-9._-]/g, "_")}-${date}.${format.extension}`;
  const sel = await withMetadata(c, credential, selectionFor(credential, query), metadataParams(c));
  return c.body(exportStream(c.env, credential.projectId, sel, query.format), 200, {
    "Content-Type": format.contentType,
    "Content-Disposition": `attachment; filename="${name}"`,
    // Audit data: no shared cache may keep a copy.
    "Cache-Control": "no-store",
  });
});

export default exports;
