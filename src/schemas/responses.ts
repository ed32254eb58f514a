import { z } from "zod";
import { ERROR_STATUS, type ErrorCode } from "../lib/errors";
import { eventInputSchema } from "./event";
import { s3SettingsViewSchema, streamEncodingViewSchema, streamFilterSchema } from "./streams";

/**
 * Response bodies, for the OpenAPI document (and through it the typed client
 * and the contract tests). Several handlers write these as JSON text directly
 * (pageJson, eventJson); these schemas describe what that text holds.
 */

const nullableString = z.string().nullable();

export const errorCodeSchema = z.enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]).meta({
  id: "ErrorCode",
  description: "The closed catalogue of error codes; each has exactly one HTTP status.",
});

export const errorResponseSchema = z
  .object({
    error: z.object({
      code: errorCodeSchema,
      message: z.string().meta({ description: "For people; may change. Match on code." }),
      details: z.record(z.string(), z.unknown()).meta({
        description:
          "VALIDATION_ERROR: issues [{path, message}]; EVENT_TOO_LARGE: field, size, limit; RATE_LIMITED: limit, retry_after; INTERNAL_ERROR: request_id.",
      }),
    }),
  })
  .meta({ id: "ErrorResponse", description: "The one error envelope of every JSON endpoint." });

export const actorOutSchema = z
  .object({ id: nullableString, type: nullableString, name: nullableString, email: nullableString })
  .meta({ id: "Actor" });

export const targetOutSchema = z.object({ type: z.string(), id: z.string(), name: nullableString }).meta({ id: "Target" });

export const eventSchema = z
  .object({
    id: z.string().meta({ description: "UUIDv7" }),
    project_id: z.string(),
    seq: z.int().meta({ description: "Position in the project's chain, from 1" }),
    action: z.string(),
    organization: nullableString,
    actor: actorOutSchema.nullable(),
    targets: z.array(targetOutSchema),
    metadata: z
      .record(z.string(), z.unknown())
      .nullable()
      .meta({ description: "null only for embed tokens minted without include_metadata" }),
    changes: z
      .array(z.object({ field: z.string(), before: z.unknown().optional(), after: z.unknown().optional() }).meta({ id: "Change" }))
      .nullable()
      .meta({ description: "Before/after values the event sent, inside its hash; null when it sent none (and for embed tokens without include_metadata)" }),
    occurred_at: z.string(),
    ip_address: nullableString,
    user_agent: nullableString,
    hash: z.string(),
    prev_hash: nullableString,
    signature: nullableString,
    pii_commitment: nullableString,
    anonymized_at: nullableString,
    schema_version: z.int().nullable().meta({ description: "The catalog schema version the event was checked against at ingest (inside its hash); null when none was" }),
    schema_valid: z.boolean().nullable().meta({ description: "false: it broke that version and was stored anyway (catalog mode warn); inside its hash" }),
    display: nullableString.meta({ description: "The sentence its action's catalog template renders, at read time (not hashed); null when the action has no template" }),
  })
  .meta({
    id: "Event",
    description:
      "A stored event. Read with an embed token, actor.email, ip_address and user_agent are null, and metadata too unless the token includes it.",
  });

export const eventEnvelopeSchema = z.object({ data: eventSchema }).meta({ id: "EventResponse" });
export const eventBatchEnvelopeSchema = z.object({ data: z.array(eventSchema) }).meta({ id: "EventBatchResponse" });
export const eventPageSchema = z
  .object({
    data: z.array(eventSchema),
    nextCursor: nullableString.meta({ description: "Pass as cursor for the next page; null on the last page" }),
    hot_since: z
      .string()
      .optional()
      .meta({ description: "Present when older events are archived: where the hot window starts (list, search, get, export and verify cover both tiers)" }),
  })
  .meta({ id: "EventPage" });

// Each item is the body POST /v1/events takes (the same component). The handler still checks the items
// one by one, so a refusal names the item: details.issues[].path events.<i>.<field>, or details.index on a 413.
export const batchRequestSchema = z
  .object({
    events: z
      .array(eventInputSchema.meta({ id: "EventInput" }))
      .min(1)
      .max(100)
      .meta({ description: "1 to 100 events; a refused one is named by its index (events.<i>.<field>)" }),
  })
  .meta({ id: "EventBatchRequest" });

const appliedRuleSchema = z.object({ pattern: z.string(), days: z.int(), cutoff: z.string() });

export const verifyResultSchema = z
  .object({
    data: z.object({
      ok: z.boolean(),
      verified: z.int(),
      anonymized: z.int(),
      unsigned: z.int(),
      restored_surrogates: z.int().meta({
        description:
          "Of the rows counted above, those whose stored text shows U+FFFD where the event was hashed with an unpaired UTF-16 surrogate " +
          "(accepted before such text was refused); each was checked as it was hashed.",
      }),
      gaps: z.array(
        z.object({
          at: z.string(),
          reason: z.literal("plan_retention"),
          purged_count: z.int(),
          first_seq: z.int(),
          last_seq: z.int(),
          rules: z.array(appliedRuleSchema),
        }),
      ),
      failure: z
        .object({
          event_id: nullableString.meta({ description: "The first event found wrong, in seq order; null when the project's log itself does not check out" }),
          reason: z.enum(["hash_mismatch", "signature_mismatch", "chain_broken", "leaf_mismatch", "archive_damaged", "index_damaged"]).meta({
            description:
              "hash_mismatch: the event's stored content no longer hashes to its stored hash (edited in the database, or erased without a record vouching for it). " +
              "signature_mismatch: its hash is not the one the project's signing key signed. " +
              "chain_broken: its prev_hash is not the hash of the event before it, and no retention gap record explains the gap (an event deleted, inserted or reordered). " +
              "leaf_mismatch: the event differs from its leaf in the project's transparency log, or the log's tiles do not add up to its signed checkpoint (event_id null). " +
              "archive_damaged: an archived segment in R2 (or an export file recorded for it) is missing or not the bytes recorded; event_id is its first event. " +
              "index_damaged: the event is intact, but lists, reads by id, receipts or search no longer find it, because a row that stands in for its index entries " +
              "was deleted, altered or planted in the database, or an archived segment's index row no longer bounds it; " +
              "`npm run projects:reindex` (with --archived for a segment) puts it back.",
          }),
          at: nullableString.meta({ description: "The event's occurred_at, when there is one" }),
        })
        .nullable()
        .meta({ description: "null when ok; else the first thing found wrong, and verified counts the events checked before it" }),
      checkpoint: z.object({ tree_size: z.int(), root_hash: z.string() }),
      purged_before_checkpoint: z.int().nullable().optional().meta({
        description:
          "since=checkpoint only: events purged in retention gaps before the checkpoint, which gaps (listing only the gaps crossed since) leaves out; " +
          "null for a checkpoint older than this count. With it, verified + unsigned + anonymized + every purged_count + this = tree_size at the head.",
      }),
    }),
  })
  .meta({ id: "VerifyResponse" });

const publicActor = z.object({ type: nullableString, id: nullableString }).nullable();
const publicTarget = z.object({ type: z.string(), id: z.string() }).nullable();

export const receiptSchema = z
  .looseObject({
    type: z.string(),
    event_id: z.string(),
    action: z.string(),
    actor: publicActor,
    target: publicTarget,
    occurred_at: z.string(),
    hash: z.string(),
    prev_hash: nullableString,
    signature: nullableString,
    seq: z.int(),
    valid: z.boolean(),
    issued_at: z.string(),
    verification_url: z.string(),
    view_url: z.string(),
    tlog_proof: nullableString.meta({ description: "c2sp.org/tlog-proof@v1 text; null while the log is being built" }),
    proof: z.object({ alg: z.literal("Ed25519"), kid: z.string(), value: z.string() }),
  })
  .meta({ id: "Receipt", description: "A signed receipt; check it offline with the keys at /.well-known/witness-keys.json." });

export const receiptStatusSchema = z
  .object({
    data: z.looseObject({
      event_id: z.string(),
      action: z.string(),
      actor: publicActor,
      target: publicTarget,
      occurred_at: z.string(),
      seq: z.int(),
      hash: z.string(),
      prev_hash: nullableString,
      exists: z.boolean(),
      valid: z.boolean(),
      checks: z.object({
        hash: z.boolean(),
        signature: z.boolean(),
        predecessor_link: z.boolean(),
        successor_link: z.boolean(),
      }),
      checked_at: z.string(),
      view_url: z.string(),
    }),
  })
  .meta({ id: "ReceiptStatus" });

// The transparency log's answers live with its query schema; the inclusion proof is also GET /v1/events/{id}/proof's.
export { logProofSchema } from "./log";

export const embedTokenResponseSchema = z
  .object({
    data: z.object({
      token: z.string(),
      expires_at: z.string(),
      organization: nullableString,
      include_metadata: z.boolean(),
      fields: z.string(),
    }),
  })
  .meta({ id: "EmbedTokenResponse" });

const publicJwkSchema = z
  .object({
    kty: z.literal("OKP"),
    crv: z.literal("Ed25519"),
    alg: z.literal("EdDSA"),
    use: z.literal("sig"),
    kid: z.string(),
    x: z.string().meta({ description: "base64url public key" }),
  })
  .meta({ id: "PublicJwk" });

export const witnessKeysSchema = z
  .object({
    keys: z.array(publicJwkSchema),
    signing_kid: nullableString,
    log: z
      .object({
        signing_kid: z.string().meta({ description: "The receipt key that also signs checkpoints" }),
        origin: z.string().meta({ description: "Template of every log's origin: <LOG_ORIGIN_HOST>/logs/<log_id>" }),
        key: z.string().meta({ description: "base64 of 0x01 followed by the 32-byte Ed25519 public key" }),
        vkey: z.string().meta({ description: "How a log's vkey is formed: <origin>+<key_id>+<key>" }),
        key_id: z.string().meta({ description: "How key_id is computed" }),
      })
      .nullable()
      .meta({ description: "How transparency log checkpoint keys derive from the signer; null without one" }),
  })
  .meta({ id: "WitnessKeys", description: "A JWK set of receipt keys; `log` says how checkpoint keys derive from the signer." });

export const serviceInfoSchema = z.object({
  data: z.object({ service: z.literal("witness"), docs: z.string(), api: z.string() }),
});

/** Log streams (src/routes/streams.ts): summary() of a stream row, and the delivery object's DeliveryStatus. */
const streamStatusSchema = z
  .enum(["active", "failing", "disabled", "paused"])
  .meta({ description: "active: delivering; failing: retrying with backoff; disabled: stopped (the destination refused for good) until a replay; paused: stopped by an admin until resumed" });

export const streamSchema = z
  .object({
    id: z.string().meta({ description: "str_ and 20 letters or digits" }),
    type: z.enum(["webhook", "splunk", "datadog", "s3"]),
    url: z.string().meta({ description: "Where deliveries go; s3: <endpoint>/<bucket>/<prefix>" }),
    s3: s3SettingsViewSchema.optional().meta({ description: "s3 streams only" }),
    status: streamStatusSchema,
    filter: streamFilterSchema,
    format: z.enum(["json", "ocsf"]).meta({ description: "What each event is written as" }),
    encoding: streamEncodingViewSchema,
    portal_organization: z.string().nullable().meta({ description: "The organization whose customer portal made this stream (its events only); null for streams made with an API key" }),
    created_at: z.string(),
  })
  .meta({ id: "Stream", description: "A log stream. Its credential (webhook secret, Splunk or Datadog token, S3 secret key) is never shown here." });

const skippedRangeSchema = z.object({ first_seq: z.int(), last_seq: z.int(), skipped_at: z.string() });

export const streamDetailSchema = streamSchema
  .extend({
    delivered_seq: z.int().meta({ description: "Events up to this seq are delivered (or filtered out, or skipped)" }),
    lag_events: z.int(),
    lag_seconds: z.int().meta({ description: "Age of the oldest undelivered event" }),
    last_success_at: nullableString,
    last_error: nullableString.meta({ description: "The last failure, kept after recovery (compare last_error_at with last_success_at)" }),
    last_error_at: nullableString,
    next_attempt_at: nullableString,
    consecutive_failures: z.int(),
    skipped_events: z.int().meta({ description: "Events purged by retention before this stream delivered them" }),
    skipped_ranges: z.array(skippedRangeSchema).meta({ description: "The latest such ranges (at most 20)" }),
  })
  .meta({ id: "StreamDetail", description: "A stream and where its delivery stands." });

export const streamListSchema = z.object({ data: z.array(streamSchema) }).meta({ id: "StreamList" });
export const streamDetailResponseSchema = z.object({ data: streamDetailSchema }).meta({ id: "StreamResponse" });
export const streamCreatedSchema = z
  .object({
    data: streamSchema.extend({
      delivered_seq: z.int().meta({ description: "The project's head at creation: delivery starts after it (replay reaches back)" }),
      secret: z.string().optional().meta({ description: "webhook only: the signing secret (whsec_...), shown this once" }),
    }),
  })
  .meta({ id: "StreamCreated" });
