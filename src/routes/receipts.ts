import type { Context } from "hono";
import { createRoute, z } from "@hono/zod-openapi";
import { documented, errors, json, router } from "../lib/openapi";
import { receiptStatusSchema } from "../schemas/responses";
import { randomHex } from "../lib/crypto";
import { ApiError } from "../lib/errors";
import { checkEvent, isValid, findChainRow, publicFields, publicStatus, receiptUrls } from "../receipts/receipt";
import type { AppEnv } from "../types";
import { receiptNotFoundPage, receiptPage } from "../receipts/receipt-page";

/**
 * Public by design: whoever was given a receipt can check it here without a
 * credential. Both surfaces show only what the receipt itself shows.
 */
export const receipts = router();
const idParam = z.object({ id: z.string().meta({ description: "The event id on the receipt" }) });

documented(receipts, createRoute({
  method: "get", path: "/{id}", tags: ["Public"], operationId: "getReceiptStatus", summary: "Check a receipt's event (no credential)", security: [],
  request: { params: idParam },
  responses: { 200: json(receiptStatusSchema, "The public check of the event"), ...errors("NOT_FOUND") },
}));

receipts.get("/:id", async (c) => {
  const row = await findChainRow(c.env, c.req.param("id"));
  if (!row) throw new ApiError("NOT_FOUND", "No event with that id");
  const check = await checkEvent(c.env, row);
  c.header("Cache-Control", "no-store");
  return c.json({ data: publicStatus(row, check, new URL(c.req.url).origin, new Date().toISOString()) });
});

/** The human view of the same check, at /receipts/<id>. Plain HTML, no script. */
export const receiptPages = router();

const html = (description: string) => ({ description, content: { "text/html": { schema: z.string() } } });
documented(receiptPages, createRoute({
  method: "get", path: "/{id}", tags: ["Public"], operationId: "viewReceipt", summary: "The human view of a receipt check (HTML, no script)", security: [],
  request: { params: idParam },
  responses: { 200: html("The check as a page"), 404: html("No such event"), ...errors() },
}));

function pageHeaders(c: Context<AppEnv>, nonce: string) {
  c.header(
    "Content-Security-Policy",
    `default-src 'none'; style-src 'nonce-${nonce}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
  );
  c.header("X-Content-Type-Options", "nosniff");
  c.header("Referrer-Policy", "no-referrer");
  c.header("Cache-Control", "no-store");
}

receiptPages.get("/:id", async (c) => {
  const nonce = randomHex(16);
  pageHeaders(c, nonce);
  const row = await findChainRow(c.env, c.req.param("id"));
  if (!row) return c.html(receiptNotFoundPage(nonce), 404);
  const check = await checkEvent(c.env, row);
  const origin = new URL(c.req.url).origin;
  return c.html(
    receiptPage({
      nonce,
      fields: publicFields(row),
      check,
      valid: isValid(check),
      checkedAt: new Date().toISOString(),
      jsonUrl: receiptUrls(origin, row.id).verification_url,
    }),
  );
});
