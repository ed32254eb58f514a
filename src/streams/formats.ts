/**
 * The wire formats of the destination types. Each turns a batch of events
 * (JSON text in the API's event shape) into one HTTP request.
 */
import { base64Decode, base64Encode, gzip } from "./encoding";
import { objectPut } from "./object-storage";
import { effectiveEncoding, type BatchEvent, type Destination, type OutgoingRequest, type StreamType } from "./batch";

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

/**
 * Bytes the entry of one event adds to a request, for batch sizing. webhook
 * and s3: the event and a separator, whatever the encoding: exactly an NDJSON
 * line, or an event and its comma in the json envelope. A Parquet row holds
 * the same values without their keys (a string's 4-byte length in place of
 * its quotes and key), before compression: its JSON bounds its share.
 */
export function entryBytes(type: StreamType, event: BatchEvent, projectId: string): number {
  return new TextEncoder().encode(event.json).length + (type === "webhook" || type === "s3" ? 1 : 160 + projectId.length);
}

/** The longest occurred_at an event keeps: toISOString's, six-digit years included (src/model/cursor.ts). */
const MAX_TIMESTAMP = "+275760-09-13T00:00:00.000Z".length;
/** What a Parquet file holds besides its rows: magic, schema, and per column chunk its offsets and statistics (min/max cut at 16 bytes). */
const PARQUET_FOOTER = 32 * 1024;

/** Bytes a request carries whatever its events: the webhook envelope, a Parquet file's footer. Batches count them in. */
export function requestOverhead(dest: Pick<Destination, "type" | "projectId" | "encoding">): number {
  const encoding = effectiveEncoding(dest.type, dest.encoding);
  if (dest.type === "webhook" && encoding === "json") {
    return `{"type":"witness.events","timestamp":"","project_id":${JSON.stringify(dest.projectId)},"events":[]}`.length + MAX_TIMESTAMP;
  }
  return encoding === "parquet" ? PARQUET_FOOTER : 0;
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
      const ndjson = effectiveEncoding("webhook", dest.encoding) === "ndjson";
      let body: string;
      if (ndjson) {
        // One event a line, nothing around them: what log shippers and collectors read as they come.
        // Signed all the same: Standard Webhooks signs the body's bytes, whatever they are.
        body = events.map((e) => `${e.json}\n`).join("");
      } else {
        // Standard Webhooks' payload timestamp: when the event occurred, not when it is sent, so
        // every attempt of a batch carries the same body: the newest occurred_at in it.
        const timestamp = events.reduce((a, e) => (Date.parse(e.occurredAt) > Date.parse(a) ? e.occurredAt : a), events[0].occurredAt);
        body =
          `{"type":"witness.events","timestamp":${JSON.stringify(timestamp)},"project_id":${JSON.stringify(dest.projectId)},` +
          `"events":[${events.map((e) => e.json).join(",")}]}`;
      }
      const id = webhookId(dest.streamId, events);
      const sentAt = String(Math.floor(now / 1000));
      return {
        headers: {
          "Content-Type": ndjson ? "application/x-ndjson" : "application/json",
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
