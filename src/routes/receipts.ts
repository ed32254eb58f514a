import { createRoute, z } from "@hono/zod-openapi";
import { documented, errors, json, router } from "../middleware/openapi";
import { receiptStatusSchema } from "../schemas/responses";
import { ApiError } from "../lib/errors";
import { orArchiveDamaged } from "../middleware/archive-damaged";
import { checkEvent, isValid, findChainRow, publicFields, publicStatus, receiptBody, receiptUrls } from "../receipts/receipt";
import { ledgerOf } from "../chain/ledger";
import { loadReceiptKeys, signReceipt } from "../sealing/receipt-signing";
import { checkPage } from "../pages/public/check-page";
import { htmlResponse } from "../pages/public/layout";
import { receiptDamagedPage, receiptNotFoundPage, receiptPage } from "../pages/public/receipt-page";

/**
 * Public by design: whoever was given a receipt can check it here without a
 * credential. Both surfaces show only what the receipt itself shows.
 */
export const receipts = router();
const idParam = z.object({ id: z.string().meta({ description: "The event id on the receipt" }) });

documented(receipts, createRoute({
  method: "get", path: "/{id}", tags: ["Public"], operationId: "getReceiptStatus", summary: "Check a receipt's event (no credential)", security: [],
  request: { params: idParam },
  responses: { 200: json(receiptStatusSchema, "The public check of the event"), ...errors("NOT_FOUND", "ARCHIVE_DAMAGED") },
}));

receipts.get("/:id", async (c) => {
  const row = await orArchiveDamaged(findChainRow(c.env, c.req.param("id")));
  if (!row) throw new ApiError("NOT_FOUND", "No event with that id");
  const check = await orArchiveDamaged(checkEvent(c.env, row));
  c.header("Cache-Control", "no-store");
  return c.json({ data: publicStatus(row, check, new URL(c.req.url).origin, new Date().toISOString()) });
});

/** The human views: /receipts/<id> (the server's check) and /receipts (a receipt checked in the browser). */
export const receiptPages = router();

const html = (description: string) => ({ description, content: { "text/html": { schema: z.string() } } });
documented(receiptPages, createRoute({
  method: "get", path: "/", tags: ["Public"], operationId: "checkReceiptPage", summary: "A page that checks a pasted receipt in the browser", security: [],
  responses: { 200: html("The page; its script checks the receipt with /.well-known/witness-keys.json"), ...errors() },
}));
documented(receiptPages, createRoute({
  method: "get", path: "/{id}", tags: ["Public"], operationId: "viewReceipt", summary: "The human view of a receipt check: the server's checks, and its signed receipt checked by the page's script", security: [],
  request: { params: idParam },
  responses: { 200: html("The check as a page"), 404: html("No such event"), 410: html("The event's archived copy is missing or damaged"), ...errors() },
}));

receiptPages.get("/", (c) => htmlResponse(c, checkPage(), { script: true, connect: true, cache: "public, max-age=300" }));

receiptPages.get("/:id", async (c) => {
  let found;
  try {
    const row = await orArchiveDamaged(findChainRow(c.env, c.req.param("id")));
    found = row && { row, check: await orArchiveDamaged(checkEvent(c.env, row)) };
  } catch (error) {
    if (error instanceof ApiError && error.code === "ARCHIVE_DAMAGED") return htmlResponse(c, receiptDamagedPage(), { status: 410 });
    throw error;
  }
  if (!found) return htmlResponse(c, receiptNotFoundPage(), { status: 404 });
  const { row, check } = found;
  const url = new URL(c.req.url);
  const checkedAt = new Date().toISOString();
  // The receipt GET /v1/events/:id/receipt would sign: the page's script checks it in the reader's browser.
  const [keys, inclusion] = await Promise.all([loadReceiptKeys(c.env.RECEIPT_SIGNING_KEYS), ledgerOf(c.env, row.project_id).logInclusion(row.seq)]);
  const receipt = keys.signer ? await signReceipt(keys, receiptBody(row, check, url.origin, checkedAt, inclusion?.proof ?? null)) : null;
  return htmlResponse(
    c,
    receiptPage({
      fields: publicFields(row),
      check,
      valid: isValid(check),
      checkedAt,
      jsonUrl: receiptUrls(url.origin, row.id).verification_url,
      host: url.host,
      anonymizedAt: row.anonymized_at,
      receipt,
    }),
    // Its script fetches the published keys from this origin.
    { script: true, connect: true },
  );
});
