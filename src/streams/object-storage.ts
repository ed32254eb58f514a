/**
 * The s3 destination: S3-compatible object storage (AWS S3, Cloudflare R2,
 * Google Cloud Storage's XML API, MinIO). Each batch is one object PUT
 * path-style and signed with AWS Signature V4 (aws4fetch), payload hash
 * included: by the stream's encoding, gzip NDJSON (one event per line, in seq
 * order; the default) or Parquet (one row per event, in seq order: ocsf-parquet.ts).
 *
 * The key names the seqs the batch covers, zero-padded so that keys sort in
 * delivery order: `<prefix><project>/<first>-<last>.ndjson.gz` (`.parquet`). A retry
 * re-reads the same (from, to] range (batch-read.ts), so it writes the same key
 * again: an overwrite, never a second copy. Unfiltered, the objects tile the
 * seqs (each first is the previous last + 1) except where retention purged
 * events first (reported as skipped); a filtered stream writes no object for
 * a range with nothing that matches.
 *
 * The stream row keeps `<endpoint>/<bucket>/<prefix>` as its url (so the
 * target checks and STREAM_DESTINATIONS apply to the endpoint's host) and,
 * sealed as its credential, the region and keys.
 */
import { AwsClient } from "aws4fetch";
import { gzip } from "./encoding";
import { ocsfParquet } from "./ocsf-parquet";
import { effectiveEncoding, type BatchEvent, type Destination, type OutgoingRequest } from "./batch";

/** What an s3 stream is created with (src/schemas/streams.ts validates it). */
export interface S3Settings {
  endpoint: string;
  bucket: string;
  region: string;
  prefix?: string;
  access_key_id: string;
  secret_access_key: string;
  /** date: a dt=YYYY-MM-DD partition per object (the day its first event occurred). */
  partition?: "none" | "date";
}

/** What is sealed in the row's credential. */
interface S3Credential {
  region: string;
  access_key_id: string;
  secret_access_key: string;
  /** Kept with the credential, which the row already seals as JSON; absent on streams made before it (none). */
  partition?: "date";
}

/** Digits of a zero-padded seq in a key: every safe integer fits, so keys sort as the seqs do. */
const SEQ_DIGITS = 16;

/** The url a stream row keeps: where its objects go. */
export function s3Url(s: S3Settings): string {
  return `${new URL(s.endpoint).origin}/${s.bucket}/${s.prefix ?? ""}`;
}

export function s3Credential(s: S3Settings): string {
  const partition = s.partition === "date" ? { partition: "date" as const } : {};
  return JSON.stringify({ region: s.region, access_key_id: s.access_key_id, secret_access_key: s.secret_access_key, ...partition } satisfies S3Credential);
}

/** The settings as the API shows them: everything but the secret key; region and key id null when the credential is unreadable. */
export function s3Public(url: string, credential: string | null) {
  const u = new URL(url);
  const [bucket, ...prefix] = u.pathname.slice(1).split("/");
  const sealed = credential === null ? null : (JSON.parse(credential) as S3Credential);
  return {
    endpoint: u.origin,
    bucket,
    region: sealed?.region ?? null,
    prefix: prefix.join("/"),
    access_key_id: sealed?.access_key_id ?? null,
    partition: sealed?.partition ?? ("none" as const),
  };
}

/**
 * An object's key after the prefix: the seqs first..last it covers, under the
 * day its first event occurred when partitioned by date (a retry reads the
 * same events, so it names the same day and key).
 */
function objectKey(projectId: string, first: number, last: number, day: string | null, extension: string): string {
  const pad = (n: number) => String(n).padStart(SEQ_DIGITS, "0");
  return `${projectId}/${day ? `dt=${day}/` : ""}${pad(first)}-${pad(last)}${extension}`;
}

/** The signed PUT of one batch's object. */
export async function objectPut(dest: Destination, events: BatchEvent[], range: { from: number; to: number }): Promise<OutgoingRequest> {
  const { region, access_key_id, secret_access_key, partition } = JSON.parse(dest.credential) as S3Credential;
  const day = partition === "date" ? events[0].occurredAt.slice(0, 10) : null;
  const parquet = effectiveEncoding("s3", dest.encoding) === "parquet";
  // The row's url ends with the prefix, whose characters need no encoding (schemas/streams.ts).
  const url = dest.url + objectKey(dest.projectId, range.from + 1, range.to, day, parquet ? ".parquet" : ".ndjson.gz");
  const body = parquet ? ocsfParquet(events) : await gzip(events.map((e) => `${e.json}\n`).join(""));
  const hash = [...new Uint8Array(await crypto.subtle.digest("SHA-256", body))].map((b) => b.toString(16).padStart(2, "0")).join("");
  const client = new AwsClient({ accessKeyId: access_key_id, secretAccessKey: secret_access_key, service: "s3", region });
  // application/gzip, no Content-Encoding: a download is the .gz file as written, never unpacked on the way.
  // Parquet compresses inside the file (Snappy pages) and has its own media type (IANA, 2024).
  const type = parquet ? "application/vnd.apache.parquet" : "application/gzip";
  const signed = await client.sign(url, { method: "PUT", headers: { "Content-Type": type, "X-Amz-Content-Sha256": hash }, body });
  return { method: "PUT", url: signed.url, headers: Object.fromEntries(signed.headers), body };
}

/** S3's error answers are XML: `<Code>: <Message>` says more than the raw text's first characters. */
export function s3ErrorText(text: string): string {
  const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1];
  if (!code) return text;
  const message = /<Message>([^<]*)<\/Message>/.exec(text)?.[1];
  return message ? `${code}: ${message}` : code;
}
