/**
 * An s3 stream's batch as one Parquet file (encoding "parquet"), for AWS
 * Security Lake custom sources and other OCSF data lakes. The stream's format
 * must be ocsf (src/schemas/streams.ts refuses json): the columns are the
 * top-level attributes of the OCSF 1.3.0 events src/model/ocsf.ts writes.
 *
 * What Security Lake asks of a custom source (its user guide, "Collecting data
 * from custom sources"): objects in Apache Parquet, each holding records of one
 * OCSF event class, under the prefix it assigns the source, partitioned
 * region=<region>/accountId=<account>/eventDay=<YYYYMMDD>, written every 5
 * minutes to a day (or past 256 MB). What this gives it: Parquet, OCSF, the
 * dt=YYYY-MM-DD partition of partition "date" (object-storage.ts) as the
 * nearest, one object per batch (small, often, while the stream keeps up). One
 * class per object is the stream's to keep: a filter on the actions of one
 * class (ocsf.ts: API Activity unless the catalog names another).
 *
 * Columns: the scalars typed as OCSF types them (integer_t INT32; long_t and
 * timestamp_t INT64, so `time` is epoch milliseconds as in OCSF's JSON, not a
 * TIMESTAMP; metadata.sequence INT64, as a seq can outgrow 32 bits); the
 * objects whose shape the mapping fixes (metadata, actor, user, api,
 * resources, ...) as nested groups and lists, queryable as actor.user.uid;
 * `unmapped`, which holds the event's own metadata and changes in whatever
 * shape they were sent, as its JSON text. The schema is the same for every
 * file, whatever a batch holds (a column no event has is all null), so a
 * crawler sees one table; an attribute the mapping gains must be added here
 * (test/streams/encodings.test.ts reads each event back whole).
 *
 * Deterministic: same events, same bytes (a retry overwrites its key with the
 * same object): rows in seq order, one row group, no write time in the file.
 */
// The package's browser entry, named: its default (Node) entry adds a file writer on node:fs, which a Worker has no use for.
import { parquetWriteBuffer } from "hyparquet-writer/src/index.js";
import type { BatchEvent } from "./batch";

type SchemaElement = NonNullable<Parameters<typeof parquetWriteBuffer>[0]["schema"]>[number];

type Field = "string" | "int32" | "int64" | "json" | { struct: Readonly<Record<string, Field>> } | { list: Field };

const USER: Field = {
  struct: { uid: "string", name: "string", email_addr: "string", type_id: "int32", type: "string", groups: { list: { struct: { name: "string" } } } },
};
const RESOURCE: Field = { struct: { uid: "string", name: "string", type: "string" } };

/** Every top-level attribute ocsf.ts writes, in its order. */
export const OCSF_COLUMNS: Readonly<Record<string, Field>> = {
  activity_id: "int32",
  activity_name: "string",
  category_uid: "int32",
  category_name: "string",
  class_uid: "int32",
  class_name: "string",
  type_uid: "int64",
  type_name: "string",
  severity_id: "int32",
  severity: "string",
  status_id: "int32",
  status: "string",
  time: "int64",
  timezone_offset: "int32",
  message: "string",
  metadata: {
    struct: {
      version: "string",
      product: { struct: { name: "string", vendor_name: "string" } },
      uid: "string",
      event_code: "string",
      original_time: "string",
      log_name: "string",
      log_provider: "string",
      sequence: "int64",
      tenant_uid: "string",
      profiles: { list: "string" },
    },
  },
  actor: { struct: { app_uid: "string", user: USER } },
  user: USER,
  user_result: USER,
  src_endpoint: { struct: { ip: "string", svc_name: "string" } },
  api: { struct: { operation: "string" } },
  resources: { list: RESOURCE },
  web_resources: { list: RESOURCE },
  service: { struct: { uid: "string" } },
  http_request: { struct: { user_agent: "string" } },
  unmapped: "json",
};

/** Parquet's schema, depth first; every field optional (OCSF leaves out what has no value). Lists in the standard three levels. */
function schemaElements(name: string, field: Field): SchemaElement[] {
  if (field === "int32" || field === "int64") return [{ name, type: field === "int32" ? "INT32" : "INT64", repetition_type: "OPTIONAL" }];
  if (field === "string" || field === "json") return [{ name, type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "OPTIONAL" }];
  if ("list" in field) {
    return [
      { name, repetition_type: "OPTIONAL", converted_type: "LIST", num_children: 1 },
      { name: "list", repetition_type: "REPEATED", num_children: 1 },
      ...schemaElements("element", field.list),
    ];
  }
  const children = Object.entries(field.struct);
  return [{ name, repetition_type: "OPTIONAL", num_children: children.length }, ...children.flatMap(([n, f]) => schemaElements(n, f))];
}

const SCHEMA: SchemaElement[] = [
  { name: "schema", num_children: Object.keys(OCSF_COLUMNS).length },
  ...Object.entries(OCSF_COLUMNS).flatMap(([name, field]) => schemaElements(name, field)),
];

const INT32_MAX = 2 ** 31 - 1;

/**
 * A value as its column takes it; anything of another shape is null rather
 * than a batch that can never be written. (The mapping writes none: strings
 * are strings, ids integers.)
 */
function cell(field: Field, v: unknown): unknown {
  if (v === undefined || v === null) return null;
  if (field === "json") return JSON.stringify(v);
  if (field === "string") return typeof v === "string" ? v : JSON.stringify(v);
  if (field === "int32") return Number.isInteger(v) && Math.abs(v as number) <= INT32_MAX ? v : null;
  if (field === "int64") return Number.isSafeInteger(v) ? BigInt(v as number) : null;
  if ("list" in field) return Array.isArray(v) ? v.map((x) => cell(field.list, x)) : null;
  if (typeof v !== "object" || Array.isArray(v)) return null;
  const out: Record<string, unknown> = {};
  for (const [name, f] of Object.entries(field.struct)) out[name] = cell(f, (v as Record<string, unknown>)[name]);
  return out;
}

/** The batch's events (OCSF JSON text, in seq order) as one Parquet file. */
export function ocsfParquet(events: BatchEvent[]): Uint8Array<ArrayBuffer> {
  const parsed = events.map((e) => JSON.parse(e.json) as Record<string, unknown>);
  const columnData = Object.entries(OCSF_COLUMNS).map(([name, field]) => ({ name, data: parsed.map((e) => cell(field, e[name])) }));
  const buffer = parquetWriteBuffer({
    columnData,
    schema: SCHEMA,
    // One row group: a batch is at most BATCH_LIMITS.s3.events rows (formats.ts).
    rowGroupSize: Math.max(events.length, 1),
    createdBy: "witness",
  });
  return new Uint8Array(buffer);
}
