import { createRoute, z } from "@hono/zod-openapi";
import { archivedEvent } from "../storage/archive-lookup";
import { hotSince } from "../storage/archive-segments";
import { ApiError } from "../lib/errors";
import { eventJson, eventWriter, pageJson, type ShapeRow } from "../model/event-shape";
import { ocsfWriter } from "../model/export-formats";
import { ledgerOf } from "../chain/ledger";
import { EMPTY_PAGE, eventSeq, hotEvent } from "../reads/event-read";
import { listHistory, searchHistory, TooManySegmentsError } from "../reads/history-read";
import { narrowedOrganization, selectionFor } from "../model/event-query";
import { appendEvents, ingestDoor, requestContext } from "../middleware/ingest";
import type { Context } from "hono";
import type { AppEnv } from "../middleware/app-env";
import { readJsonBody } from "../lib/request-body";
import { checkEvent, loadChainRow, receiptBody } from "../receipts/receipt";
import { loadReceiptKeys, signReceipt } from "../sealing/receipt-signing";
import { MAX_TERMS, MIN_TERM_CHARS, searchTerms } from "../model/search-query";
import { validate, validationError } from "../lib/validate";
import { verifyChunked } from "../chain/verify-run";
import { access, projectOf } from "../middleware/credential";
import { projectWalk } from "../middleware/project-walk";
import { parseEvent } from "../schemas/event";
import { listQuerySchema, searchQuerySchema } from "../schemas/list-query";
import { verifyQuery } from "../schemas/verify";
import { eventsReadDb } from "../storage/shards";
import { AUTH_ERRORS, documented, errors, json, router } from "../middleware/openapi";
import { CAPS, eventInputSchema } from "../schemas/event";
import { batchRequestSchema, eventBatchEnvelopeSchema, eventEnvelopeSchema, eventPageSchema, receiptSchema, verifyResultSchema, logProofSchema } from "../schemas/responses";
import { orArchiveDamaged } from "../middleware/archive-damaged";
import { catalogFor } from "../catalog/catalog-cache";
import { decodeFeedCursor, encodeFeedCursor, readFeed, seqBefore } from "../reads/feed";
import { feedPageSchema, feedQuerySchema } from "../schemas/feed";
import { metadataParams, withMetadata } from "../middleware/metadata-filters";

export const MAX_BATCH = 100;
/** What c.json() would set: pages are written as JSON text directly (pageJson). */
const JSON_TYPE = { "Content-Type": "application/json" };

/**
 * A page across history, or a clear error: an archived segment it must read that is missing or
 * damaged is a 410 (as GET /v1/events/:id), never a 500 that says to retry; a page that would read
 * more segments than one request may is a 422 saying how to narrow it.
 */
async function historyAnswer<T>(page: Promise<T>): Promise<T> {
  try {
    return await orArchiveDamaged(page, "An archived segment this page must read is missing or damaged; retrying will not help until an operator restores it (verify names the first event it holds)");
  } catch (error) {
    if (!(error instanceof TooManySegmentsError)) throw error;
    throw new ApiError(
      "QUERY_TOO_BROAD",
      `This page would read more than ${error.most} archived segments: the archive holds these events far out of time order around this cursor. Narrow it with a filter (actor_id, organization, ip_address, target, action), or export them with POST /v1/jobs`,
      { most_segments: error.most },
    );
  }
}

const events = router();
const idParam = z.object({ id: z.string().meta({ description: "The event id" }) });
const ingestHeaders = z.object({
  "Idempotency-Key": z.string().min(1).max(255).optional().meta({
    description: "Send the same key when retrying: the first answer is replayed (Idempotent-Replayed: true), nothing is stored twice",
  }),
});
const CAPS_TEXT =
  "Caps, in UTF-8 bytes of each field (413 EVENT_TOO_LARGE above them, checked before the shape): " +
  Object.entries(CAPS).map(([field, cap]) => `${field} ${cap}${field === "targetEntries" ? " entries" : ""}`).join(", ") +
  ". ip_address and user_agent come from the request; occurred_at defaults to the time of receipt.";
const INGEST_ERRORS = [...AUTH_ERRORS, "VALIDATION_ERROR", "EVENT_TOO_LARGE", "UNSUPPORTED_MEDIA_TYPE", "IDEMPOTENCY_KEY_REUSED"] as const;
const INGEST = access("ingest");
const READ = access("read");
const READ_OR_EMBED = access("read", { allowEmbed: true });
const METADATA_FILTERS =
  "Also `metadata.<key>=<value>` (at most 4): only events of the actions whose catalog schema declares <key> filterable, whose metadata holds that value " +
  "(typed as declared: a number, true or false, or text). A key no schema declares is a 400 naming it.";

documented(events, createRoute({
  method: "post", path: "/", tags: ["Events"], operationId: "createEvent", summary: "Record one event", security: INGEST.security, description: CAPS_TEXT,
  request: { headers: ingestHeaders, body: { required: true, content: { "application/json": { schema: eventInputSchema.meta({ id: "EventInput" }) } } } },
  responses: { 201: json(eventEnvelopeSchema, "The stored event, chained and signed (a replayed Idempotency-Key answers the first result with Idempotent-Replayed: true)"), ...errors(...INGEST_ERRORS) },
}));
events.post("/", INGEST.guard, ingestDoor, async (c) => {
  const { body, text } = await readJsonBody(c);
  const event = parseEvent(body, requestContext(c.req.raw));
  const [json] = await appendEvents(c, [event], text);
  return c.body(`{"data":${json}}`, 201, JSON_TYPE);
});

documented(events, createRoute({
  method: "post", path: "/batch", tags: ["Events"], operationId: "createEventBatch", summary: "Record 1 to 100 events atomically", security: INGEST.security,
  description: `All or nothing: one invalid event refuses the batch (its index is in the error's path). ${CAPS_TEXT}`,
  request: { headers: ingestHeaders, body: { required: true, content: { "application/json": { schema: batchRequestSchema } } } },
  responses: { 201: json(eventBatchEnvelopeSchema, "The stored events, in chain order"), ...errors(...INGEST_ERRORS) },
}));
events.post("/batch", INGEST.guard, ingestDoor, async (c) => {
  const { body, text } = await readJsonBody(c);
  const list = body.events;
  if (!Array.isArray(list) || list.length < 1 || list.length > MAX_BATCH) {
    throw validationError([{ path: "events", message: `events must be an array of 1 to ${MAX_BATCH} events` }]);
  }
  const ctx = requestContext(c.req.raw);
  const parsed = list.map((raw, i) => parseEvent(raw, ctx, `events.${i}.`));
  const events = await appendEvents(c, parsed, text, true);
  return c.body(`{"data":[${events.join(",")}]}`, 201, JSON_TYPE);
});

documented(events, createRoute({
  method: "get", path: "/verify", tags: ["Verification"], operationId: "verifyEvents", summary: "Verify the project's chain", security: READ.security,
  request: { query: verifyQuery },
  responses: { 200: json(verifyResultSchema, "The verification report"), ...errors(...AUTH_ERRORS, "VALIDATION_ERROR") },
}));
// One verify or export per project at a time, within the project's budget (src/auth/project-walk.ts).
events.get("/verify", READ.guard, validate("query", verifyQuery), projectWalk({ untilBodyEnds: false }), async (c) => {
  const { from, to, since } = c.req.valid("query");
  const window = { from: from ?? null, to: to ?? null };
  const projectId = projectOf(c.get("credential"));
  // Chunked (src/chain/verify-chunks.ts): each chunk its own invocation, this request only coordinates.
  const checkpoint = since === "checkpoint" ? await ledgerOf(c.env, projectId).verifyCheckpoint() : null;
  return c.json({ data: await verifyChunked(c.env, projectId, window, { since: checkpoint }) });
});

documented(events, createRoute({
  method: "get", path: "/feed", tags: ["Events"], operationId: "feedEvents", summary: "Every event in chain order, for collectors that poll", security: READ.security,
  description:
    "Oldest first, in seq order, over hot and archived history: every event exactly once, whatever it was backdated to, across any number of restarts " +
    "of a collector that saves nextCursor (also in `Link: <...>; rel=\"next\"`). nextCursor is never null: at the head it points past the last event. " +
    "Seqs with no event are listed in gaps. One answer reads at most 1,000 seqs past the cursor: with a selective filter it may hold fewer events " +
    "than limit, even none, and at_head false says to ask again at once. A cursor from another project, altered, or of another format is a 400. " +
    METADATA_FILTERS,
  request: { query: feedQuerySchema },
  responses: { 200: json(feedPageSchema, "One page of the feed"), ...errors(...AUTH_ERRORS, "VALIDATION_ERROR", "ARCHIVE_DAMAGED") },
}));
events.get("/feed", READ.guard, validate("query", feedQuerySchema), async (c) => {
  const query = c.req.valid("query");
  const credential = c.get("credential")!;
  const projectId = projectOf(credential);
  const db = await eventsReadDb(c.env, projectId);
  let after = 0;
  if (query.after !== undefined) {
    const decoded = await decodeFeedCursor(c.env, projectId, query.after);
    if (typeof decoded === "string") throw validationError([{ path: "after", message: `this cursor ${decoded}` }]);
    after = decoded;
  } else if (query.since !== undefined) after = await orArchiveDamaged(seqBefore(c.env, db, projectId, query.since));
  const sel = await withMetadata(c, credential, selectionFor(credential, query), metadataParams(c));
  const catalog = await catalogFor(c.env, projectId);
  const write = query.format === "ocsf" ? ocsfWriter(catalog.ocsfView()) : (row: ShapeRow) => eventJson(row, catalog.display);
  const read = () => orArchiveDamaged(readFeed(c.env, db, sel, projectId, after, query.limit, write));
  let page = await read();
  // Long poll: nothing new yet; the ledger answers at its next commit (src/chain/head-waiters.ts), or when the wait is over.
  if (page.atHead && page.events.length === 0 && page.gaps.length === 0 && query.wait > 0) {
    const head = await ledgerOf(c.env, projectId).waitForHead(page.through, query.wait * 1000);
    if (head > page.through) page = await read();
  }
  const nextCursor = await encodeFeedCursor(c.env, projectId, page.through);
  const next = new URL(c.req.url);
  next.searchParams.delete("since");
  next.searchParams.set("after", nextCursor);
  c.header("Link", `<${next.pathname}${next.search}>; rel="next"`);
  c.header("Cache-Control", "no-store");
  return c.body(`{"data":[${page.events.join(",")}],"gaps":${JSON.stringify(page.gaps)},"nextCursor":${JSON.stringify(nextCursor)},"at_head":${page.atHead}}`, 200, JSON_TYPE);
});

documented(events, createRoute({
  method: "get", path: "/{id}/receipt", tags: ["Receipts"], operationId: "getEventReceipt", summary: "A signed receipt for one event", security: READ.security,
  request: { params: idParam },
  responses: { 200: json(z.object({ data: receiptSchema }), "The signed receipt"), ...errors(...AUTH_ERRORS, "NOT_FOUND", "ARCHIVE_DAMAGED") },
}));
events.get("/:id/receipt", READ.guard, async (c) => {
  const projectId = projectOf(c.get("credential"));
  const db = await eventsReadDb(c.env, projectId);
  const row = (await loadChainRow(db, c.req.param("id"), projectId)) ?? (await orArchiveDamaged(archivedEvent(c.env, db, projectId, c.req.param("id"))));
  if (!row) throw new ApiError("NOT_FOUND", "No event with that id in this project");
  const [check, keys, inclusion] = await Promise.all([
    orArchiveDamaged(checkEvent(c.env, row)),
    loadReceiptKeys(c.env.RECEIPT_SIGNING_KEYS),
    ledgerOf(c.env, projectId).logInclusion(row.seq),
  ]);
  const body = receiptBody(row, check, new URL(c.req.url).origin, new Date().toISOString(), inclusion?.proof ?? null);
  return c.json({ data: await signReceipt(keys, body) });
});

documented(events, createRoute({
  method: "get", path: "/", tags: ["Events"], operationId: "listEvents", summary: "List events, newest first", security: READ_OR_EMBED.security, description: METADATA_FILTERS,
  request: { query: listQuerySchema },
  responses: { 200: json(eventPageSchema, "One page of events"), ...errors(...AUTH_ERRORS, "VALIDATION_ERROR", "ARCHIVE_DAMAGED", "QUERY_TOO_BROAD") },
}));
events.get("/", READ_OR_EMBED.guard, validate("query", listQuerySchema), async (c) => {
  const query = c.req.valid("query");
  const credential = c.get("credential")!;
  const sel = await withMetadata(c, credential, selectionFor(credential, query), metadataParams(c));
  const db = await eventsReadDb(c.env, projectOf(credential));
  const catalog = catalogFor(c.env, projectOf(credential));
  // Hot and archived events, one order and one cursor (src/reads/history-read.ts); segments are looked for only when there are some.
  const since = hotSince(db, projectOf(credential));
  const archived = since.then((s) => s !== null, () => true);
  const page = sel ? await historyAnswer(listHistory(c.env, db, sel, query.cursor ?? null, query.limit, archived)) : EMPTY_PAGE;
  return c.body(pageJson(page.rows, page.nextCursor, eventWriter(credential, (await catalog).display), await since), 200, JSON_TYPE);
});

documented(events, createRoute({
  method: "get", path: "/search", tags: ["Events"], operationId: "searchEvents", summary: "Full-text search over events", security: READ_OR_EMBED.security, description: METADATA_FILTERS,
  request: { query: searchQuerySchema },
  responses: { 200: json(eventPageSchema, "One page of matching events"), ...errors(...AUTH_ERRORS, "VALIDATION_ERROR", "ARCHIVE_DAMAGED", "QUERY_TOO_BROAD") },
}));
events.get("/search", READ_OR_EMBED.guard, validate("query", searchQuerySchema), async (c) => {
  const query = c.req.valid("query");
  const credential = c.get("credential")!;
  const sel = await withMetadata(c, credential, selectionFor(credential, query), metadataParams(c));
  // Text with no word of MIN_TERM_CHARS or more (one-letter words, punctuation, emoji) matches nothing.
  const terms = searchTerms(query.q);
  if (terms.length > MAX_TERMS) {
    throw validationError([{ path: "q", message: `q must have at most ${MAX_TERMS} different words of ${MIN_TERM_CHARS} or more characters` }]);
  }
  const db = await eventsReadDb(c.env, projectOf(credential));
  const catalog = catalogFor(c.env, projectOf(credential));
  const since = hotSince(db, projectOf(credential));
  const archived = since.then((s) => s !== null, () => true);
  const page = sel && terms.length > 0 ? await historyAnswer(searchHistory(c.env, db, sel, terms, query.cursor ?? null, query.limit, archived)) : EMPTY_PAGE;
  return c.body(pageJson(page.rows, page.nextCursor, eventWriter(credential, (await catalog).display), await since), 200, JSON_TYPE);
});

documented(events, createRoute({
  method: "get", path: "/{id}/proof", tags: ["Transparency log"], operationId: "getEventProof", summary: "The event's inclusion proof", security: READ.security,
  request: { params: idParam },
  responses: { 200: json(logProofSchema, "c2sp.org/tlog-proof@v1 inclusion proof"), ...errors(...AUTH_ERRORS, "NOT_FOUND", "LOG_NOT_READY", "ARCHIVE_DAMAGED") },
}));
events.get("/:id/proof", READ.guard, eventProof);

documented(events, createRoute({
  method: "get", path: "/{id}", tags: ["Events"], operationId: "getEvent", summary: "One event", security: READ_OR_EMBED.security,
  request: { params: idParam },
  responses: { 200: json(eventEnvelopeSchema, "The event"), ...errors(...AUTH_ERRORS, "NOT_FOUND", "ARCHIVE_DAMAGED") },
}));
events.get("/:id", READ_OR_EMBED.guard, async (c) => {
  const credential = c.get("credential")!;
  const projectId = projectOf(credential);
  const db = await eventsReadDb(c.env, projectId);
  const catalog = catalogFor(c.env, projectId);
  const hot = await hotEvent(c.env, db, projectId, c.req.param("id"));
  // Not hot: maybe in the cold tier (src/storage/archive-segments.ts).
  const row = hot ?? (await orArchiveDamaged(archivedEvent(c.env, db, projectId, c.req.param("id"))));
  const narrowed = narrowedOrganization(credential);
  const hidden = narrowed !== null && row?.organization !== narrowed;
  if (!row || hidden) throw new ApiError("NOT_FOUND", "No event with that id in this project");
  return c.body(`{"data":${eventWriter(credential, (await catalog).display)(row)}}`, 200, JSON_TYPE);
});

/**
 * GET /v1/events/:id/proof: the event's
 * inclusion proof as c2sp.org/tlog-proof@v1 text against the newest checkpoint.
 * Archiving never changes a leaf: an event in the cold tier has its proof too.
 */
async function eventProof(c: Context<AppEnv>) {
  const projectId = projectOf(c.get("credential"));
  const id = c.req.param("id") ?? "";
  const seq = await orArchiveDamaged(eventSeq(c.env, projectId, id));
  if (seq === null) throw new ApiError("NOT_FOUND", "No event with that id in this project");
  const ledger = ledgerOf(c.env, projectId);
  const proof = await ledger.logInclusion(seq);
  if (!proof) throw logNotReady(await ledger.logInfo());
  c.header("Cache-Control", "no-store");
  return c.json({ data: proof });
}

function logNotReady(info: { status: string; built_size: number; head_seq: number; blocked: unknown }): ApiError {
  const why =
    info.status === "building"
      ? `the project's transparency log is being built (${info.built_size} of ${info.head_seq} events); retry shortly`
      : "the project's transparency log cannot be built (see GET /v1/log)";
  return new ApiError("LOG_NOT_READY", `This event is not in the transparency log: ${why}`, {
    status: info.status,
    built_size: info.built_size,
    head_seq: info.head_seq,
    blocked: info.blocked,
  });
}

export default events;
