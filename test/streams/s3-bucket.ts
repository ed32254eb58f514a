/**
 * The S3-compatible server vitest's globalSetup starts on the Node side
 * (s3-server.mjs), as the stream tests that deliver to it read it: a signed
 * client, a stream's s3 settings for it, the keys under a prefix, and the
 * object key a request's URL names.
 * Each test file writes under prefixes of its own (the server is shared).
 */
import { AwsClient } from "aws4fetch";
import { expect, inject } from "vitest";

declare module "vitest" {
  export interface ProvidedContext {
    s3: { endpoint: string; bucket: string; region: string; accessKeyId: string; secretAccessKey: string };
  }
}

export const server = inject("s3");
export const reader = new AwsClient({ accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey, service: "s3", region: server.region });

/** A stream's `s3` settings for the test server, writing under `prefix`. */
export function s3Settings(prefix: string, overrides: Record<string, unknown> = {}) {
  return {
    endpoint: server.endpoint,
    bucket: server.bucket,
    region: server.region,
    prefix,
    access_key_id: server.accessKeyId,
    secret_access_key: server.secretAccessKey,
    ...overrides,
  };
}

/** Keys under prefix, as ListObjectsV2 gives them (S3 lists in key order); every one, or the test fails. */
export async function listKeys(prefix: string): Promise<string[]> {
  const res = await reader.fetch(`${server.endpoint}/${server.bucket}?list-type=2&prefix=${encodeURIComponent(prefix)}`);
  expect(res.status).toBe(200);
  const xml = await res.text();
  expect(xml).toContain("<IsTruncated>false</IsTruncated>");
  return [...xml.matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => m[1]);
}

/** The object key a request to the server names (path-style: /<bucket>/<key>). */
export const objectKey = (url: string) => decodeURIComponent(new URL(url).pathname.slice(server.bucket.length + 2));
