import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import { documented, errors, json, registerComponents } from "../middleware/openapi";
import type { AppEnv } from "../middleware/app-env";
import pkg from "../../package.json";

const INFO = {
  title: "Witness API",
  version: pkg.version,
  description:
    "Tamper-evident audit events: record them, read and search them, verify the chain, export, hand out receipts, " +
    "and check everything offline. Errors share one envelope (ErrorResponse) with a closed set of codes; every " +
    "response carries RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset, and a 429 also Retry-After.",
  license: { name: "Apache-2.0", identifier: "Apache-2.0" },
};

/** Where the Worker's static assets put the reference's script (src/scripts/docs-assets.mjs copies it). */
export const SCALAR_SCRIPT = "/docs/scalar.js";

/**
 * The reference page: no inline script, no CDN. Scalar reads its settings from
 * the empty #api-reference element and loads /openapi.json from this origin.
 * Scalar injects <style> elements at run time, hence style-src 'unsafe-inline';
 * scripts, fonts, images and connections stay on this origin.
 */
const CONFIG = JSON.stringify({
  withDefaultFonts: false,
  hideClientButton: true,
  telemetry: false,
  showDeveloperTools: "never",
  agent: { disabled: true },
  mcp: { disabled: true },
});
const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Witness API reference</title>
</head>
<body>
<script id="api-reference" type="application/json" data-url="/openapi.json" data-configuration="${CONFIG.replaceAll('"', "&quot;")}"></script>
<script src="/docs/setup.js"></script>
<script src="${SCALAR_SCRIPT}"></script>
</body>
</html>
`;
export const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
  "font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** GET /openapi.json (built once per isolate) and GET /docs, on the app itself: the document covers every route. */
export function apiDocs(app: OpenAPIHono<AppEnv>): void {
  registerComponents(app);
  let document: string | null = null;

  documented(app, createRoute({
    method: "get", path: "/openapi.json", tags: ["Public"], operationId: "getOpenApiDocument", summary: "This document (OpenAPI 3.1)", security: [],
    responses: { 200: json(z.record(z.string(), z.unknown()), "The OpenAPI 3.1 document"), ...errors() },
  }));
  app.get("/openapi.json", (c) => {
    document ??= JSON.stringify(app.getOpenAPI31Document({ openapi: "3.1.0", info: INFO, servers: [{ url: "/" }], tags: TAGS }));
    return c.body(document, 200, { "Content-Type": "application/json", "Cache-Control": "public, max-age=300", "Access-Control-Allow-Origin": "*" });
  });

  documented(app, createRoute({
    method: "get", path: "/docs", tags: ["Public"], operationId: "getDocs", summary: "The API reference page (Scalar, served by this Worker)", security: [],
    responses: { 200: { description: "The page", content: { "text/html": { schema: z.string() } } }, ...errors() },
  }));
  app.get("/docs", (c) =>
    c.html(DOCS_HTML, 200, {
      "Content-Security-Policy": DOCS_CSP,
      "X-Content-Type-Options": "nosniff",
      "Referrer-Policy": "no-referrer",
      "Cache-Control": "public, max-age=300",
    }),
  );
}

const TAGS = [
  { name: "Events", description: "Record, read and search audit events" },
  { name: "Catalog", description: "What each action carries: schemas, versions, display sentences, validation at ingest" },
  { name: "Verification", description: "Check the chain" },
  { name: "Receipts", description: "Signed, offline-checkable receipts" },
  { name: "Exports", description: "Everything, streamed" },
  { name: "Actors", description: "Erasure of personal data" },
  { name: "Retention", description: "What the daily purge deletes" },
  { name: "Transparency log", description: "The project's C2SP tlog" },
  { name: "Embed", description: "Tokens for the <witness-feed> component" },
  { name: "Alerts", description: "Tell people when something happens: rules, channels, firings" },
  { name: "Streams", description: "Deliver every event, in order, to a webhook, Splunk or Datadog" },
  { name: "Operations", description: "Operator-requested work on a project, such as a shard move" },
  { name: "Public", description: "No credential needed" },
];
