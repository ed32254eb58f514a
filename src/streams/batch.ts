/**
 * A batch on its way out: the events it carries, the destination it goes to
 * and the request that carries it there. formats.ts builds that request for
 * each destination type; object-storage.ts for S3-compatible buckets.
 */
export type StreamType = "webhook" | "splunk" | "datadog" | "s3";

/** How a batch's events are put in its request body (the events themselves are in the stream's format, json or ocsf). */
export const STREAM_ENCODINGS = ["json", "ndjson", "parquet"] as const;
export type StreamEncoding = (typeof STREAM_ENCODINGS)[number];

/**
 * The encodings each type takes, its default first. webhook: json, the signed
 * envelope {"type":"witness.events",...,"events":[...]}, or ndjson, one event a
 * line; s3: ndjson, a gzip NDJSON object, or parquet (OCSF only, for AWS
 * Security Lake: parquet.ts). Splunk HEC and Datadog have one wire format each.
 */
export const ENCODINGS: Readonly<Record<StreamType, readonly StreamEncoding[]>> = {
  webhook: ["json", "ndjson"],
  s3: ["ndjson", "parquet"],
  splunk: [],
  datadog: [],
};

/** A stream's encoding as it applies: the stored one, else its type's default; null for the types that have none. */
export function effectiveEncoding(type: StreamType, stored: StreamEncoding | null | undefined): StreamEncoding | null {
  const allowed = ENCODINGS[type];
  return stored && allowed.includes(stored) ? stored : (allowed[0] ?? null);
}

export interface BatchEvent {
  seq: number;
  occurredAt: string;
  json: string;
}

export interface Destination {
  streamId: string;
  projectId: string;
  type: StreamType;
  url: string;
  /** webhook: the whsec_ secret; splunk: HEC token; datadog: API key; s3: JSON of region and keys (object-storage.ts). */
  credential: string;
  host: string;
  /** The stream's encoding column (migration 0023); null or absent: the type's default (effectiveEncoding). */
  encoding?: StreamEncoding | null;
}

export interface OutgoingRequest {
  method: "POST" | "PUT";
  url: string;
  headers: Record<string, string>;
  body: BodyInit;
}
