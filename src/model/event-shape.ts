/**
 * src/model/: the event as every layer above sees it. The stored row
 * (chain-row.ts), the event's JSON shape (this file, where to start),
 * NewEvent as ingest hands it to the ledger (new-event.ts), selections and
 * cursors (event-query.ts, cursor.ts), search terms (search-query.ts,
 * search-index.ts), export line formats (csv.ts, export-formats.ts) and the
 * overlay that applies an erasure still being applied (pending-erasures.ts,
 * erasable.ts). Knows the database schema, nothing of storage or HTTP.
 */
import type { EventRow } from "../db/schema";
import type { Reader, Statement } from "./event-query";
import { PENDING_COLUMN, scrubByColumn } from "./pending-erasures";
import { listOrder } from "./periods";

/** The stored columns the event shape is made of (pii_salt, row_id and received_at stay inside). */
export const SHAPE_COLUMNS = [
  "id",
  "project_id",
  "seq",
  "action",
  "organization",
  "actor_id",
  "actor_type",
  "actor_name",
  "actor_email",
  "targets",
  "metadata",
  "occurred_at",
  "ip_address",
  "user_agent",
  "hash",
  "prev_hash",
  "signature",
  "pii_commitment",
  "anonymized_at",
  "changes",
  "schema_version",
  "schema_valid",
] as const satisfies ReadonlyArray<keyof EventRow>;

export type ShapeRow = Pick<EventRow, (typeof SHAPE_COLUMNS)[number]>;

/**
 * A row of SHAPE_COLUMNS read with D1's raw(), as an object. all() builds
 * each row with Object.fromEntries; this literal has one fixed shape, so
 * eventJson() reads every row of a page the same fast way.
 */
export function shapeRowOf(c: unknown[]): ShapeRow {
  return {
    id: c[0], project_id: c[1], seq: c[2], action: c[3], organization: c[4], actor_id: c[5], actor_type: c[6],
    actor_name: c[7], actor_email: c[8], targets: c[9], metadata: c[10], occurred_at: c[11], ip_address: c[12],
    user_agent: c[13], hash: c[14], prev_hash: c[15], signature: c[16], pii_commitment: c[17], anonymized_at: c[18],
    changes: c[19] ?? null, schema_version: c[20] ?? null, schema_valid: c[21] ?? null,
  } as ShapeRow;
}

/**
 * SHAPE_COLUMNS for a SELECT from `events e`, then PENDING_COLUMN (at
 * PENDING_AT): the erasures still being applied that may cover the row, which
 * shapeRows applies (src/model/pending-erasures.ts), in the same query.
 */
export const SHAPE_SELECT = `${SHAPE_COLUMNS.map((c) => `e.${c}`).join(", ")}, ${PENDING_COLUMN}`;
export const PENDING_AT = SHAPE_COLUMNS.length;

/**
 * The one event shape of ingest, get, list, search and JSON export, written
 * as JSON text: targets and metadata are stored as canonical JSON text, so they
 * go in as they are instead of being parsed and serialized again for every
 * event of every page. test/unit/event-shape.test.ts holds it equal to
 * JSON.stringify of the shape built as an object.
 */
export function eventJson(row: ShapeRow, display?: Display): string {
  return writeEvent(row, row.actor_email, row.ip_address, row.user_agent, row.metadata, row.changes ?? null, display);
}

/**
 * The event's display sentence (issue 35), rendered at read time from its
 * action's catalog template (src/catalog/), never stored or hashed; null when
 * the action has none. It sees the event as the reader does: `view` holds the
 * e-mail, metadata and changes this reader may see (null when withheld).
 */
export type Display = (row: ShapeRow, view: { actor_email: string | null; metadata: string; changes: string | null }) => string | null;

/**
 * The reduced event shape of embed tokens: a feed shown to one customer's
 * users must not hand them each other's e-mail, address or browser, nor
 * metadata unless the token was minted with include_metadata. Withheld fields
 * keep their keys with null (metadata too), so clients parse one shape; the
 * actor stays an object whenever the full shape has one.
 */
export function reducedEventJson(row: ShapeRow, includeMetadata: boolean, display?: Display): string {
  return writeEvent(row, null, null, null, includeMetadata ? row.metadata : "null", includeMetadata ? (row.changes ?? null) : null, display);
}

/** The event shape a credential may read, with display sentences when the catalog has templates. */
export function eventWriter(credential: Reader, display?: Display): (row: ShapeRow) => string {
  if (credential.kind !== "embed") return (row) => eventJson(row, display);
  const includeMetadata = credential.includeMetadata;
  return (row) => reducedEventJson(row, includeMetadata, display);
}

function writeEvent(
  row: ShapeRow,
  email: string | null,
  ip: string | null,
  userAgent: string | null,
  metadata: string,
  changes: string | null,
  display: Display | undefined,
): string {
  const s = JSON.stringify;
  const hasActor = row.actor_id !== null || row.actor_type !== null || row.actor_name !== null || row.actor_email !== null;
  const actor = hasActor
    ? `{"id":${s(row.actor_id)},"type":${s(row.actor_type)},"name":${s(row.actor_name)},"email":${s(email)}}`
    : "null";
  return (
    `{"id":${s(row.id)},"project_id":${s(row.project_id)},"seq":${s(row.seq)},"action":${s(row.action)},` +
    `"organization":${s(row.organization)},"actor":${actor},"targets":${row.targets},"metadata":${metadata},` +
    `"changes":${changes ?? "null"},` +
    `"occurred_at":${s(row.occurred_at)},"ip_address":${s(ip)},"user_agent":${s(userAgent)},` +
    `"hash":${s(row.hash)},"prev_hash":${s(row.prev_hash)},"signature":${s(row.signature)},` +
    `"pii_commitment":${s(row.pii_commitment)},"anonymized_at":${s(row.anonymized_at)},` +
    `"schema_version":${s(row.schema_version ?? null)},"schema_valid":${row.schema_valid == null ? "null" : row.schema_valid === 1},` +
    `"display":${s(display?.(row, { actor_email: email, metadata, changes }) ?? null)}}`
  );
}

/**
 * `{"data":[...events],"nextCursor":...}` of a list or search page, in the shape `write` makes;
 * with hot_since when older events are archived (where the hot window starts; list and search span both tiers).
 */
export function pageJson(rows: ShapeRow[], nextCursor: string | null, write: (row: ShapeRow) => string = eventJson, hotSince: string | null = null): string {
  const hot = hotSince === null ? "" : `,"hot_since":${JSON.stringify(hotSince)}`;
  return `{"data":[${rows.map((row) => write(row)).join(",")}],"nextCursor":${JSON.stringify(nextCursor)}${hot}}`;
}

/**
 * Events in the event shape's columns (SHAPE_SELECT), read as arrays: how
 * every read of the event shape goes, so also where pending erasures are
 * applied (src/model/pending-erasures.ts): a covered row comes back scrubbed.
 */
export async function shapeRows(db: D1Database, statement: Statement): Promise<ShapeRow[]> {
  return shapeCells(await db.prepare(statement.sql).bind(...statement.params).raw());
}

/**
 * The rows of a counted page (event-query.ts, countedPage: SHAPE_SELECT's
 * columns, then a count) shaped as shapeRows does, in list order (a join's
 * rows keep no order of their own), and the count.
 */
export async function shapeCounted(db: D1Database, statement: Statement): Promise<{ rows: ShapeRow[]; count: number }> {
  const cells = await db.prepare(statement.sql).bind(...statement.params).raw();
  const rows = await shapeCells(cells.filter((c) => c[0] !== null));
  return { rows: rows.sort(listOrder), count: Number(cells[0].at(-1)) };
}

/** Raw rows of SHAPE_SELECT's columns (and any after them) as ShapeRows, in their order, scrubbed as their pending erasures say. */
export function shapeCells(cells: unknown[][]): Promise<ShapeRow[]> {
  return scrubByColumn(cells.map(shapeRowOf), cells, PENDING_AT);
}
