import type { Context } from "hono";
import { createRoute, z } from "@hono/zod-openapi";
import { etag } from "hono/etag";
import { documented, errors, router } from "../middleware/openapi";
import { sha256Base64 } from "../embed/digest";
import { CHECK_JS } from "../pages/public/check-script.gen";
import { landingPage } from "../pages/public/landing";
import { htmlResponse } from "../pages/public/layout";
import { PUBLIC_CSS } from "../pages/public/styles";
import type { AppEnv } from "../middleware/app-env";

/** The public pages' stylesheet and script, at /assets/public: served by the Worker, no CDN. */
export const publicAssets = router();

const ASSETS: Record<string, { body: string; type: string }> = {
  "site.css": { body: PUBLIC_CSS, type: "text/css; charset=utf-8" },
  "check.js": { body: CHECK_JS, type: "text/javascript; charset=utf-8" },
};
const etags = new Map<string, Promise<string>>();

for (const [name, asset] of Object.entries(ASSETS)) {
  const media = asset.type.split(";")[0];
  documented(publicAssets, createRoute({
    method: "get", path: `/${name}`, tags: ["Public"], operationId: name === "site.css" ? "getPublicStyles" : "getReceiptCheckScript",
    summary: name === "site.css" ? "The public pages' stylesheet" : "The receipt check page's script (the client's receipt check, bundled)", security: [],
    responses: { 200: { description: "The asset (ETag; 304 on If-None-Match)", content: { [media]: { schema: z.string() } } }, 304: { description: "Not modified" }, ...errors() },
  }));
  publicAssets.get(`/${name}`, etag(), async (c) => {
    let tag = etags.get(name);
    if (!tag) etags.set(name, (tag = sha256Base64(asset.body).then((h) => `"${h.slice(0, 27)}"`)));
    return c.body(asset.body, 200, {
      "Content-Type": asset.type,
      ETag: await tag,
      // The URLs are not versioned: short freshness, then a cheap 304.
      "Cache-Control": "public, max-age=300, stale-while-revalidate=3600",
      "X-Content-Type-Options": "nosniff",
    });
  });
}

/** GET / for a browser: the landing page (the JSON answer stays in src/app.ts for everyone else). */
export function landingResponse(c: Context<AppEnv>): Response {
  return htmlResponse(c, landingPage(), { negotiated: true, cache: "public, max-age=300" });
}

/** A documented 200 that answers JSON to API clients and a page to browsers. */
export function orHtml<T extends { content: Record<string, unknown> }>(response: T): T {
  return { ...response, content: { ...response.content, "text/html": { schema: z.string() } } };
}
