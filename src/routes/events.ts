import { Hono } from "hono";
import { ApiError } from "../lib/errors";
import { eventWriter, pageJson, SHAPE_SELECT } from "../reads/event-shape";
import { ledgerOf, ledgerView } from "../chain/ledger";
import { EMPTY_PAGE, listEvents, searchEvents, shapeRows } from "../reads/event-read";
import { selectionFor } from "../reads/event-query";
import { appendEvents, requestContext } from "./ingest";
import { eventProof } from "./log";
import { readJsonBody } from "../lib/request-body";
import { checkEvent, loadChainRow, receiptBody } from "../receipts/receipt";
import { loadReceiptKeys, signReceipt } from "../receipts/receipt-signing";
import { MAX_TERMS, MIN_TERM_CHARS, searchTerms } from "../reads/search-query";
import { loadKeyring } from "../chain/signing-keys";
import { validate, validationError } from "../lib/validate";
import { verifyProject } from "../chain/verify";
import { projectOf, requireCredential } from "../middleware/credential";
import { parseEvent } from "../schemas/event";
import { listQuerySchema, searchQuerySchema } from "../schemas/list-query";
import { verifyQuery } from "../schemas/verify";
import { eventsDb } from "../storage/shards";
import type { AppEnv } from "../types";

export const MAX_BATCH = 100;
/** What c.json() would set: pages are written as JSON text directly (pageJson). */
const JSON_TYPE = { "Content-Type": "application/json" };

const events = new Hono<AppEnv>();
const apiKeyOnly = requireCredential({ allowEmbed: false });
const readers = requireCredential({ allowEmbed: true });

events.post("/", apiKeyOnly, async (c) => {
  const { body, text } = await readJsonBody(c);
  const event = parseEvent(body, requestContext(c.req.raw));
  const [json] = await appendEvents(c, [event], text);
  return c.body(`{"data":${json}}`, 201, JSON_TYPE);
});

events.post("/batch", apiKeyOnly, async (c) => {
  const { body, text } = await readJsonBody(c);
  const list = body.events;
  if (!Array.isArray(list) || list.length < 1 || list.length > MAX_BATCH) {
    throw validationError([{ path: "events", message: `events must be an array of 1 to ${MAX_BATCH} events` }]);
  }
  const ctx = requestContext(c.req.raw);
  const parsed = list.map((raw, i) => parseEvent(raw, ctx, `events.${i}.`));
  const events = await appendEvents(c, parsed, text);
  return c.body(`{"data":[${events.join(",")}]}`, 201, JSON_TYPE);
});

events.get("/verify", apiKeyOnly, validate("query", verifyQuery), async (c) => {
  const { from, to } = c.req.valid("query");
  const ring = await loadKeyring(c.env.SIGNING_KEYS);
  const window = { from: from ?? null, to: to ?? null };
  const projectId = projectOf(c.get("credential"));
  return c.json({ data: await verifyProject(await eventsDb(c.env, projectId), ring, projectId, window, await ledgerView(c.env, projectId)) });
});

events.get("/:id/receipt", apiKeyOnly, async (c) => {
  const projectId = projectOf(c.get("credential"));
  const row = await loadChainRow(await eventsDb(c.env, projectId), c.req.param("id"), projectId);
  if (!row) throw new ApiError("NOT_FOUND", "No event with that id in this project");
  const [check, keys, inclusion] = await Promise.all([
    checkEvent(c.env, row),
    loadReceiptKeys(c.env.RECEIPT_SIGNING_KEYS),
    ledgerOf(c.env, projectId).logInclusion(row.seq),
  ]);
  const body = receiptBody(row, check, new URL(c.req.url).origin, new Date().toISOString(), inclusion?.proof ?? null);
  return c.json({ data: await signReceipt(keys, body) });
});

events.get("/", readers, validate("query", listQuerySchema), async (c) => {
  const query = c.req.valid("query");
  const credential = c.get("credential")!;
  const sel = selectionFor(credential, query);
  const page = sel ? await listEvents(await eventsDb(c.env, sel.projectId), sel, query.cursor ?? null, query.limit) : EMPTY_PAGE;
  return c.body(pageJson(page.rows, page.nextCursor, eventWriter(credential)), 200, JSON_TYPE);
});

events.get("/search", readers, validate("query", searchQuerySchema), async (c) => {
  const query = c.req.valid("query");
  const credential = c.get("credential")!;
  const sel = selectionFor(credential, query);
  // Text with no word of MIN_TERM_CHARS or more (one-letter words, punctuation, emoji) matches nothing.
  const terms = searchTerms(query.q);
  if (terms.length > MAX_TERMS) {
    throw validationError([{ path: "q", message: `q must have at most ${MAX_TERMS} different words of ${MIN_TERM_CHARS} or more characters` }]);
  }
  const page = sel && terms.length > 0 ? await searchEvents(await eventsDb(c.env, sel.projectId), sel, terms, query.cursor ?? null, query.limit) : EMPTY_PAGE;
  return c.body(pageJson(page.rows, page.nextCursor, eventWriter(credential)), 200, JSON_TYPE);
});

events.get("/:id/proof", apiKeyOnly, eventProof);

events.get("/:id", readers, async (c) => {
  const credential = c.get("credential")!;
  const projectId = projectOf(credential);
  const [row] = await shapeRows(await eventsDb(c.env, projectId), {
    sql: `SELECT ${SHAPE_SELECT} FROM events e WHERE e.id = ? AND e.project_id = ?`,
    params: [c.req.param("id"), projectId],
  });
  const hidden = credential.kind === "embed" && credential.organization !== null && row?.organization !== credential.organization;
  if (!row || hidden) throw new ApiError("NOT_FOUND", "No event with that id in this project");
  return c.body(`{"data":${eventWriter(credential)(row)}}`, 200, JSON_TYPE);
});

export default events;
