import { createRoute, z } from "@hono/zod-openapi";
import { AUTH_ERRORS, documented, errors, json, router } from "../middleware/openapi";
import { embedTokenResponseSchema } from "../schemas/responses";
import { etag } from "hono/etag";
import { demoNoReaderPage, demoPage } from "../embed/demo-page";
import { sha256Base64 } from "../embed/digest";
import { FEED_ELEMENT_JS } from "../embed/feed-element";
import { EMBED_TTL, mintEmbedToken } from "../auth/embed-token";
import { ApiError } from "../lib/errors";
import { readBodyBytes, readJsonObject } from "../lib/request-body";
import { toIssues, validate, validationError } from "../lib/validate";
import { access, apiKeyOf } from "../middleware/credential";
import { demoQuerySchema, embedTokenRequestSchema } from "../schemas/embed";
import { newestReadingKey } from "../auth/key-store";

/** POST /v1/embed/token: API keys mint short-lived, read-only tokens for the feed. */
export const embedTokens = router();

/** An embed token reads, so minting one needs read: an ingest-only key cannot hand out read access. */
const MINT = access("read");

documented(embedTokens, createRoute({
  method: "post", path: "/token", tags: ["Embed"], operationId: "createEmbedToken", summary: "Mint a short-lived read-only token for the feed", security: MINT.security,
  description: "Every field is optional: an empty POST (no body, no Content-Type) asks for the defaults.",
  request: { body: { required: false, content: { "application/json": { schema: embedTokenRequestSchema.meta({ id: "EmbedTokenRequest" }) } } } },
  responses: { 201: json(embedTokenResponseSchema, "The token; store it nowhere"), ...errors(...AUTH_ERRORS, "VALIDATION_ERROR", "UNSUPPORTED_MEDIA_TYPE", "EVENT_TOO_LARGE") },
}));

/** Told with every token, so whoever mints one knows what its holders will not see. */
const FIELDS_NOTE =
  "Events read with this token have actor.email, ip_address and user_agent set to null, " +
  "and metadata set to null unless include_metadata is true.";

embedTokens.post("/token", MINT.guard, async (c) => {
  const credential = apiKeyOf(c.get("credential"), "Only an API key can mint embed tokens");
  // Every field is optional, so an empty POST (no body, no Content-Type) asks for the defaults.
  const empty = c.req.header("Content-Type") === undefined && (await readBodyBytes(c)).byteLength === 0;
  const parsed = embedTokenRequestSchema.safeParse(empty ? {} : await readJsonObject(c));
  if (!parsed.success) throw validationError(toIssues(parsed.error));
  const organization = parsed.data.organization ?? null;
  const ttl = parsed.data.ttl_seconds ?? EMBED_TTL.default;
  const includeMetadata = parsed.data.include_metadata ?? false;
  const grant = { projectId: credential.projectId, keyPrefix: credential.prefix, organization, includeMetadata };
  const { token, expiresAt } = await mintEmbedToken(c.env, grant, ttl);
  c.header("Cache-Control", "no-store");
  const data = { token, expires_at: expiresAt, organization, include_metadata: includeMetadata, fields: FIELDS_NOTE };
  return c.json({ data }, 201);
});

/** Public assets under /embed: the component script, and the demo page in dev. */
export const embedAssets = router();

documented(embedAssets, createRoute({
  method: "get", path: "/feed.js", tags: ["Public"], operationId: "getFeedScript", summary: "The <witness-feed> web component", security: [],
  responses: { 200: { description: "The script (ETag; 304 on If-None-Match)", content: { "text/javascript": { schema: z.string() } } }, 304: { description: "Not modified" }, ...errors() },
}));
documented(embedAssets, createRoute({
  method: "get", path: "/demo", tags: ["Public"], operationId: "getFeedDemo", summary: "Dev only: a demo page of the feed (localhost, EMBED_DEMO_PROJECT set)", security: [],
  request: { query: demoQuerySchema },
  responses: {
    200: { description: "The demo page", content: { "text/html": { schema: z.string() } } },
    409: { description: "The demo project has no live API key that can read; the page says how to make one", content: { "text/html": { schema: z.string() } } },
    ...errors("NOT_FOUND", "VALIDATION_ERROR"),
  },
}));

let feedEtag: Promise<string> | null = null;

embedAssets.get("/feed.js", etag(), async (c) => {
  feedEtag ??= sha256Base64(FEED_ELEMENT_JS).then((h) => `"${h.slice(0, 27)}"`);
  return c.body(FEED_ELEMENT_JS, 200, {
    "Content-Type": "text/javascript; charset=utf-8",
    ETag: await feedEtag,
    // Short freshness, then a cheap 304 revalidation: the URL is not versioned.
    "Cache-Control": "public, max-age=300, stale-while-revalidate=3600",
    "X-Content-Type-Options": "nosniff",
    // Host pages on any origin load it, including ones that require CORP or CORS.
    "Cross-Origin-Resource-Policy": "cross-origin",
    "Access-Control-Allow-Origin": "*",
  });
});

const LOCAL_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/**
 * Dev only: served when EMBED_DEMO_PROJECT names a project and the request is
 * to localhost, so a deployed worker never mints tokens for anonymous visitors.
 */
embedAssets.get("/demo", validate("query", demoQuerySchema), async (c) => {
  const projectId = c.env.EMBED_DEMO_PROJECT;
  const url = new URL(c.req.url);
  if (!projectId || !LOCAL_HOSTS.has(url.hostname)) throw new ApiError("NOT_FOUND", "No such route");
  const minter = await newestReadingKey(c.env, projectId);
  const organization = c.req.valid("query").organization ?? null;
  const page = minter
    ? await demoPage({
        ...(await mintEmbedToken(c.env, { projectId, keyPrefix: minter.prefix, organization }, EMBED_TTL.default)),
        baseUrl: url.origin,
        projectId,
        organization,
        minter,
      })
    : await demoNoReaderPage(projectId);
  return c.html(page.html, minter ? 200 : 409, {
    "Content-Security-Policy": page.csp,
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
  });
});
