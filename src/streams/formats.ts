/**
 * The wire formats of the destination types. Each turns a batch of events
 * (JSON text in the API's event shape) into one HTTP request.
 */
import { base64Decode, base64Encode, gzip } from "./encoding";
import { objectPut } from "./object-storage";
import type { BatchEvent, Destination, OutgoingRequest, StreamType } from "./batch";

/** Per type: at most this many events and (uncompressed) bytes per request. */
export const BATCH_LIMITS: Record<StreamType, { events: number; bytes: number }> = {
  // Receivers commonly cap bodies at 1 MB or so; Splunk HEC's default max_content_length is larger.
  webhook: { events: 500, bytes: 1_000_000 },
  splunk: { events: 1000, bytes: 1_000_000 },
  // Datadog logs intake v2: 1,000 entries and 5 MB (uncompressed) per request.
  datadog: { events: 1000, bytes: 5_000_000 - 64 * 1024 },
  // One object per batch: larger batches mean fewer objects to list, still one quick PUT.
  s3: { events: 2000, bytes: 5_000_000 },
};

/** Bytes the entry of one event adds to a request, for batch sizing. */
export function entryBytes(type: StreamType, event: BatchEvent, projectId: string): number {
  return new TextEncoder().encode(event.json).length + (type === "webhook" || type === "s3" ? 1 : 160 + projectId.length);
}

export function webhookId(streamId: string, events: BatchEvent[]): string {
  return `${streamId}:${events[0].seq}-${events[events.length - 1].seq}`;
}

/** The request for a batch; range: the seqs (from, to] it covers (an object's key names them). */
export async function buildRequest(dest: Destination, events: BatchEvent[], range: { from: number; to: number }, now = Date.now()): Promise<OutgoingRequest> {
  if (dest.type === "s3") return objectPut(dest, events, range);
  return { method: "POST", url: dest.url, ...(await postBody(dest, events, now)) };
}

async function postBody(dest: Destination, events: BatchEvent[], now: number): Promise<{ headers: Record<string, string>; body: BodyInit }> {
  switch (dest.type) {
    case "webhook": {
      // Standard Webhooks' payload timestamp: when the event occurred, not when it is sent, so
      // every attempt of a batch carries the same body: the newest occurred_at in it.
      const timestamp = events.reduce((a, e) => (Date.parse(e.occurredAt) > Date.parse(a) ? e.occurredAt : a), events[0].occurredAt);
      const body =
        `{"type":"witness.events","timestamp":${JSON.stringify(timestamp)},"project_id":${JSON.stringify(dest.projectId)},` +
        `"events":[${events.map((e) => e.json).join(",")}]}`;
      const id = webhookId(dest.streamId, events);
      const sentAt = String(Math.floor(now / 1000));
      return {
        headers: {
          "Content-Type": "application/json",
          "webhook-id": id,
          "webhook-timestamp": sentAt,
          "webhook-signature": await signWebhook(dest.credential, id, sentAt, body),
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
    case "s3":
      throw new Error("s3 batches are PUT as objects (objectPut)");
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
