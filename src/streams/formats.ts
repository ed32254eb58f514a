/**
 * The wire formats of the three destination types. Each turns a batch of
 * events (JSON text in the API's event shape) into one HTTP request.
 */
import { base64Decode, base64Encode } from "./encoding";

export type StreamType = "webhook" | "splunk" | "datadog";

/** Per type: at most this many events and (uncompressed) bytes per request. */
export const BATCH_LIMITS: Record<StreamType, { events: number; bytes: number }> = {
  // Receivers commonly cap bodies at 1 MB or so; Splunk HEC's default max_content_length is larger.
  webhook: { events: 500, bytes: 1_000_000 },
  splunk: { events: 1000, bytes: 1_000_000 },
  // Datadog logs intake v2: 1,000 entries and 5 MB (uncompressed) per request.
  datadog: { events: 1000, bytes: 5_000_000 - 64 * 1024 },
};

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
  /** webhook: the whsec_ secret; splunk: HEC token; datadog: API key. */
  credential: string;
  host: string;
}

/** Bytes the entry of one event adds to a request, for batch sizing. */
export function entryBytes(type: StreamType, event: BatchEvent, projectId: string): number {
  return new TextEncoder().encode(event.json).length + (type === "webhook" ? 1 : 160 + projectId.length);
}

export function webhookId(streamId: string, events: BatchEvent[]): string {
  return `${streamId}:${events[0].seq}-${events[events.length - 1].seq}`;
}

export async function buildRequest(dest: Destination, events: BatchEvent[], now = Date.now()): Promise<{ headers: Record<string, string>; body: BodyInit }> {
  switch (dest.type) {
    case "webhook": {
      const body = `{"type":"witness.events","project_id":${JSON.stringify(dest.projectId)},"events":[${events.map((e) => e.json).join(",")}]}`;
      const id = webhookId(dest.streamId, events);
      const timestamp = String(Math.floor(now / 1000));
      return {
        headers: {
          "Content-Type": "application/json",
          "webhook-id": id,
          "webhook-timestamp": timestamp,
          "webhook-signature": await signWebhook(dest.credential, id, timestamp, body),
        },
        body,
      };
    }
    case "splunk": {
      const body = events
        .map(
          (e) =>
            `{"time":${Date.parse(e.occurredAt) / 1000},"host":${JSON.stringify(dest.host)},"source":${JSON.stringify(`witness:${dest.projectId}`)},` +
            `"sourcetype":"witness:event","event":${e.json}}`,
        )
        .join("\n");
      return { headers: { "Content-Type": "application/json", Authorization: `Splunk ${dest.credential}` }, body };
    }
    case "datadog": {
      const entries = events.map(
        (e) =>
          `{"ddsource":"witness","service":"witness","hostname":${JSON.stringify(dest.host)},` +
          `"ddtags":${JSON.stringify(`project_id:${dest.projectId}`)},"message":${JSON.stringify(e.json)}}`,
      );
      const gzipped = await gzip(`[${entries.join(",")}]`);
      return {
        headers: { "Content-Type": "application/json", "Content-Encoding": "gzip", "DD-API-KEY": dest.credential },
        body: gzipped,
      };
    }
  }
}

/** Standard Webhooks: v1,<base64 HMAC-SHA256(key = base64-decoded secret after whsec_, "id.timestamp.body")>. */
export async function signWebhook(secret: string, id: string, timestamp: string, body: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", base64Decode(secret.replace(/^whsec_/, "")), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${id}.${timestamp}.${body}`));
  return `v1,${base64Encode(new Uint8Array(mac))}`;
}

export function newWebhookSecret(): string {
  return `whsec_${base64Encode(crypto.getRandomValues(new Uint8Array(32)))}`;
}

async function gzip(text: string): Promise<Uint8Array> {
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}
