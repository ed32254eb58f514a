/**
 * A batch on its way out: the events it carries, the destination it goes to
 * and the request that carries it there. formats.ts builds that request for
 * each destination type; object-storage.ts for S3-compatible buckets.
 */
export type StreamType = "webhook" | "splunk" | "datadog" | "s3";

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
}

export interface OutgoingRequest {
  method: "POST" | "PUT";
  url: string;
  headers: Record<string, string>;
  body: BodyInit;
}
