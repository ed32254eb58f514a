import { z } from "zod";
import { ENCODINGS, STREAM_ENCODINGS } from "../streams/batch";

const ACTION_PATTERN = /^(\*|[^*]{1,255}|[^*]{1,254}\*)$/;

export const streamFilterSchema = z
  .object({
    actions: z
      .array(z.string("each action must be a string").regex(ACTION_PATTERN, "an action is exact, or a prefix ending in * (like user.*)"))
      .min(1, "actions, when given, lists at least one action")
      .max(100, "at most 100 actions")
      .optional(),
    organization: z.string("organization must be a string").min(1).max(255).optional(),
  })
  .strict()
  .meta({ id: "StreamFilter", description: "Which events the stream delivers; {} (or no filter) delivers every event." });

/**
 * A token goes out in a header of every delivery (Authorization: Splunk …, DD-API-KEY):
 * CR, LF, NUL or non-Latin-1 would make every fetch throw, and spaces at either end
 * would be trimmed off. Real HEC tokens and Datadog keys are plain visible ASCII.
 */
const HEADER_VALUE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/** An object key's characters: none needs encoding in a URL path, so every S3-compatible service signs and stores it alike. */
const KEY_PREFIX = /^(?!\/)(?!.*\/\/)(?!(?:.*\/)?\.{1,2}(?:\/|$))[A-Za-z0-9._=\/-]*$/;

function bareOrigin(raw: string): boolean {
  try {
    const u = new URL(raw);
    return u.pathname === "/" && !u.search && !raw.includes("#") && !u.username && !u.password;
  } catch {
    return false;
  }
}

/** Destination of type s3. The endpoint's scheme and host pass the same checks as a url (public https, STREAM_DESTINATIONS). */
export const s3SettingsSchema = z
  .object({
    endpoint: z
      .string("endpoint must be a string")
      .max(2048, "endpoint is at most 2048 characters")
      .refine(bareOrigin, "endpoint is the service's base URL, like https://<account>.r2.cloudflarestorage.com or https://s3.us-east-1.amazonaws.com: no path, query or credentials"),
    bucket: z
      .string("bucket must be a string")
      .regex(/^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$/, "bucket is 3 to 222 lowercase letters, digits, dots, hyphens or underscores, starting and ending with a letter or digit"),
    region: z.string("region must be a string").regex(/^[a-z0-9-]{1,40}$/, "region is like us-east-1, or auto (R2, GCS)"),
    prefix: z
      .string("prefix must be a string")
      .max(512, "prefix is at most 512 characters")
      .regex(KEY_PREFIX, "prefix uses letters, digits and . _ = - / only, with no leading /, no // and no . or .. segment (like witness/ or logs-)")
      .optional()
      .meta({ description: "Put before every key; objects are <prefix><project id>/<first seq>-<last seq>.ndjson.gz (.parquet with encoding parquet)" }),
    access_key_id: z.string("access_key_id must be a string").regex(/^[A-Za-z0-9._+=-]{1,128}$/, "access_key_id is 1 to 128 letters, digits or . _ + = -"),
    secret_access_key: z
      .string("secret_access_key must be a string")
      .regex(/^[\x21-\x7e]{1,256}$/, "secret_access_key is 1 to 256 visible ASCII characters")
      .meta({ description: "Stored encrypted, never shown again" }),
    partition: z
      .enum(["none", "date"], "partition is none or date")
      .optional()
      .meta({
        description:
          "date: keys are <prefix><project id>/dt=YYYY-MM-DD/<first seq>-<last seq>.ndjson.gz (.parquet), the day (UTC) the batch's first event occurred, for tables partitioned by day (Athena, Security Lake). Default none",
      }),
  })
  .strict()
  .meta({ id: "S3Destination", description: "S3-compatible object storage (S3, R2, GCS XML API): one object per batch (gzip NDJSON, or Parquet with encoding parquet), signed with SigV4." });

/** What the API shows of an s3 stream's settings: all but the secret key. */
export const s3SettingsViewSchema = s3SettingsSchema
  .omit({ secret_access_key: true })
  .extend({
    prefix: z.string(),
    // Kept sealed with the secret key: unreadable once STREAM_SECRETS_KEY changed (the stream then fails until recreated).
    region: z.string().nullable().meta({ description: "null if the stored settings can no longer be decrypted" }),
    access_key_id: z.string().nullable().meta({ description: "null if the stored settings can no longer be decrypted" }),
  })
  .meta({ id: "S3DestinationView", description: "An s3 stream's settings; its secret_access_key is never shown." });

/** POST /v1/streams. token: the Splunk HEC token or the Datadog API key; webhooks get a generated secret instead; s3 takes its settings in s3. */
export const createStreamSchema = z
  .object({
    type: z.enum(["webhook", "splunk", "datadog", "s3"], "type is webhook, splunk, datadog or s3"),
    url: z.string("url must be a string").min(1).max(2048, "url is at most 2048 characters").optional().meta({ description: "Required except for s3" }),
    token: z
      .string("token must be a string")
      .min(1)
      .max(4096)
      .regex(HEADER_VALUE, "token is sent as an HTTP header value: visible ASCII characters only (no CR, LF, NUL or other control characters, no space at either end)")
      .optional(),
    s3: s3SettingsSchema.optional(),
    filter: streamFilterSchema.optional(),
    format: z.enum(["json", "ocsf"], "format is json or ocsf").optional().meta({
      description: "json (default): each event in the API's event shape. ocsf: each event as an OCSF 1.3.0 event (API Activity, or the class its action's catalog schema names)",
    }),
    encoding: z.enum(STREAM_ENCODINGS, "encoding is json, ndjson or parquet").optional().meta({
      description:
        "How a batch's events are put in the body. webhook: json (default), the signed envelope {type, timestamp, project_id, events}; ndjson, one event a line " +
        "(application/x-ndjson), signed the same. s3: ndjson (default), a gzip NDJSON object; parquet, one Parquet file (<first seq>-<last seq>.parquet) " +
        "of OCSF columns, for AWS Security Lake custom sources: needs format ocsf. splunk and datadog: none",
    }),
  })
  .strict()
  .superRefine((s, ctx) => {
    if (s.encoding !== undefined) {
      const allowed = ENCODINGS[s.type];
      const problem =
        allowed.length === 0
          ? `a ${s.type} stream has one wire format; send no encoding`
          : !allowed.includes(s.encoding)
            ? `a ${s.type} stream's encoding is ${allowed.join(" or ")}`
            : s.encoding === "parquet" && s.format !== "ocsf"
              ? "parquet files have OCSF columns: encoding parquet needs format ocsf"
              : null;
      if (problem) ctx.addIssue({ code: "custom", path: ["encoding"], message: problem });
    }
    if (s.type === "s3") {
      if (!s.s3) ctx.addIssue({ code: "custom", path: ["s3"], message: "an s3 stream needs s3: endpoint, bucket, region, access_key_id, secret_access_key (prefix optional)" });
      if (s.url !== undefined) ctx.addIssue({ code: "custom", path: ["url"], message: "an s3 stream writes to s3.endpoint and s3.bucket; send no url" });
      if (s.token !== undefined) ctx.addIssue({ code: "custom", path: ["token"], message: "an s3 stream signs with s3.access_key_id and s3.secret_access_key; send no token" });
      return;
    }
    if (s.url === undefined) ctx.addIssue({ code: "custom", path: ["url"], message: `a ${s.type} stream needs its url` });
    if (s.s3 !== undefined) ctx.addIssue({ code: "custom", path: ["s3"], message: "s3 settings are for type s3 only" });
    if (s.type !== "webhook" && !s.token) ctx.addIssue({ code: "custom", path: ["token"], message: `a ${s.type} stream needs its token` });
    if (s.type === "webhook" && s.token) ctx.addIssue({ code: "custom", path: ["token"], message: "webhooks are signed with a secret generated for them; send no token" });
  });

/** A stream's encoding as the API shows it: the stored one or its type's default (batch.ts, effectiveEncoding). */
export const streamEncodingViewSchema = z
  .enum(STREAM_ENCODINGS)
  .nullable()
  .meta({ description: "How each batch's events are put in the body: webhook json or ndjson, s3 ndjson or parquet; null for splunk and datadog, which have one wire format" });

export const replayStreamSchema = z
  .object({ from_seq: z.number("from_seq must be a number").int("from_seq must be a whole number").min(1, "from_seq is at least 1") })
  .strict();
