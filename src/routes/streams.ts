import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { ledgerAnchor } from "../chain/ledger";
import { recordAdminAction } from "../chain/self-audit";
import { randomAlphanumeric } from "../lib/crypto";
import { ApiError } from "../lib/errors";
import { AUTH_ERRORS, documented, errors, json, router } from "../middleware/openapi";
import { readJsonObject } from "../lib/request-body";
import { toIssues, validationError } from "../lib/validate";
import { access, auditActor, projectOf } from "../middleware/credential";
import { streamCreatedSchema, streamDetailResponseSchema, streamListSchema } from "../schemas/responses";
import { createStreamSchema, replayStreamSchema } from "../schemas/streams";
import { effectiveEncoding } from "../streams/batch";
import { newWebhookSecret } from "../streams/formats";
import { s3Credential, s3Public, s3Url } from "../streams/object-storage";
import { openCredential, sealCredential } from "../streams/secrets";
import { countStreams, deleteStream, deliveryStub, insertStream, listStreams, MAX_STREAMS_PER_PROJECT, projectStream, type StreamRow } from "../streams/store";
import { destinationAllowed, notAllowedReason, streamDestinations } from "../streams/destinations";
import { checkStreamTarget, targetRules } from "../streams/targets";
import { forgetStreams } from "../streams/wake";
import type { AppEnv } from "../middleware/app-env";
import { requestContext } from "../middleware/ingest";

/**
 * Log streams: the project's events delivered in seq order to a webhook,
 * Splunk HEC, Datadog or S3-compatible object storage. API key only; creating, deleting, replaying, pausing
 * and resuming need admin (a stream can send the whole history anywhere it points) and are
 * recorded in the project's chain as witness.stream.*. A destination's
 * credential is shown once (the webhook secret, at creation) and never again.
 * An s3 stream's settings are shown but for its secret key.
 */
const streams = router();
const READ = access("read");
const ADMIN = access("admin");
const idParam = z.object({ id: z.string().meta({ description: "The stream id (str_...)" }) });
/** Bodies are read by the handlers (readJsonObject: 415, 413, then 400), never by zod-openapi: these only document them. */
const BODY_ERRORS = ["VALIDATION_ERROR", "UNSUPPORTED_MEDIA_TYPE", "EVENT_TOO_LARGE"] as const;
/** 204: json()'s rate-limit headers, no body. */
const noContent = (description: string) => ({ description, headers: json(z.null(), description).headers });

/**
 * A stream as the API shows it; an s3 stream's settings less the secret key, part of them
 * read from its sealed credential (when STREAM_SECRETS_KEY changed, shown without them, not a 500).
 */
async function summary(env: Env, row: Pick<StreamRow, "id" | "type" | "url" | "status" | "filter" | "format" | "encoding" | "created_at" | "credential" | "portal_organization">) {
  const base = {
    id: row.id, type: row.type, url: row.url, status: row.status, filter: JSON.parse(row.filter), format: row.format ?? "json",
    encoding: effectiveEncoding(row.type, row.encoding), portal_organization: row.portal_organization ?? null, created_at: row.created_at,
  };
  if (row.type !== "s3") return base;
  const credential = await openCredential(env, row.id, row.credential).catch(() => null);
  return { ...base, s3: s3Public(row.url, credential) };
}

/**
 * Records a stream action in the project's chain. The url without its query
 * (where some endpoints take a token) and never the token or secret: the
 * chain keeps what it is given for good.
 */
function recordStreamAction(
  c: Context<AppEnv>,
  verb: "created" | "deleted" | "replayed" | "paused" | "resumed" | "tested",
  row: Pick<StreamRow, "id" | "type" | "url" | "project_id" | "portal_organization">,
  metadata: Record<string, unknown> = {},
  organization: string | null = row.portal_organization ?? null,
) {
  const url = new URL(row.url);
  return recordAdminAction(c.env, row.project_id, {
    action: `witness.stream.${verb}`,
    actor: auditActor(c.get("credential")),
    // A customer's portal stream: its organization sees the record in its own feed, and the stream delivers it.
    organization,
    targets: [{ type: "stream", id: row.id }],
    metadata: { type: row.type, url: `${url.origin}${url.pathname}`, ...metadata },
  }, requestContext(c.req.raw));
}

/** The stream, as the caller may see it: a customer's portal session sees only the streams its organization's portal made. */
async function streamOf(c: Context<AppEnv>, id: string): Promise<StreamRow> {
  const credential = c.get("credential");
  const row = await projectStream(c.env, projectOf(credential), id);
  const visible = row && (credential?.kind !== "portal" || row.portal_organization === credential.organization);
  if (!visible) throw new ApiError("NOT_FOUND", "No such stream in this project");
  return row;
}

/** Streams one organization's portal may have: a customer cannot fill the project's MAX_STREAMS_PER_PROJECT alone. */
export const MAX_PORTAL_STREAMS = 5;

documented(streams, createRoute({
  method: "post", path: "/", tags: ["Streams"], operationId: "createStream", summary: "Stream the project's events to a webhook, Splunk HEC, Datadog or S3-compatible storage", security: ADMIN.security,
  description:
    "Delivery starts with the events committed after creation, in seq order; replay reaches back. The url (s3: s3.endpoint) must be public https, on a host the deployment's STREAM_DESTINATIONS allows (when it lists any). " +
    `A webhook's signing secret is generated and shown once, in this answer; splunk and datadog take their token, s3 its secret_access_key, never shown again. ` +
    "An s3 stream writes one gzip NDJSON object per batch, keyed <prefix><project id>/<first seq>-<last seq>.ndjson.gz (zero-padded: keys sort in delivery order; a retried batch overwrites its own key). " +
    `At most ${MAX_STREAMS_PER_PROJECT} streams a project. ` +
    "Recorded in the chain as witness.stream.created (type, url without its query, filter); delivery starts after that event.",
  request: { body: { required: true, content: { "application/json": { schema: createStreamSchema.meta({ id: "StreamCreateRequest" }) } } } },
  responses: { 201: json(streamCreatedSchema, "The new stream (with the webhook secret, this once)"), ...errors(...AUTH_ERRORS, ...BODY_ERRORS) },
}));
streams.post("/", ADMIN.guard, async (c) => {
  const caller = c.get("credential");
  const projectId = projectOf(caller);
  const parsed = createStreamSchema.safeParse(await readJsonObject(c));
  if (!parsed.success) throw validationError(toIssues(parsed.error));
  const input = parsed.data;
  // A customer's portal: its organization's events only, whatever the form said.
  const portal = caller?.kind === "portal" ? caller.organization : null;
  if (portal !== null) {
    if (input.filter?.organization !== undefined && input.filter.organization !== portal) {
      throw validationError([{ path: "filter.organization", message: `a stream made in this portal carries organization ${portal}'s events only` }]);
    }
    input.filter = { ...input.filter, organization: portal };
    if ((await listStreams(c.env, projectId, portal)).length >= MAX_PORTAL_STREAMS) {
      throw validationError([{ path: "", message: `an organization's portal has at most ${MAX_PORTAL_STREAMS} streams; delete one first` }]);
    }
  }
  const s3 = input.type === "s3" ? input.s3! : null;
  const target = await checkStreamTarget(s3 ? s3Url(s3) : input.url!, targetRules(c.env));
  if (!target.ok) throw validationError([s3 ? { path: "s3.endpoint", message: target.reason.replace(/^url\b/, "endpoint") } : { path: "url", message: target.reason }]);
  if ((await countStreams(c.env, projectId)) >= MAX_STREAMS_PER_PROJECT) throw validationError([{ path: "", message: `a project has at most ${MAX_STREAMS_PER_PROJECT} streams` }]);

  const id = `str_${randomAlphanumeric(20)}`;
  const secret = input.type === "webhook" ? newWebhookSecret() : s3 ? s3Credential(s3) : input.token!;
  const row = {
    id,
    type: input.type,
    url: target.url.href,
    status: "active" as const,
    filter: JSON.stringify(input.filter ?? {}),
    format: input.format ?? null,
    encoding: input.encoding ?? null,
    created_at: new Date().toISOString(),
    portal_organization: portal,
  };
  const credential = await sealCredential(c.env, id, secret);
  await insertStream(c.env, { ...row, project_id: projectId, credential });
  // Recorded before delivery starts, so no stream ever delivers without its record;
  // delivery starts with the events committed after the record; replay reaches back.
  let seq: number;
  try {
    const audit = await recordStreamAction(c, "created", { ...row, project_id: projectId }, { filter: input.filter ?? {} });
    seq = (JSON.parse(audit) as { seq: number }).seq;
    await deliveryStub(c.env, id).start(seq);
  } catch (error) {
    // A stream whose delivery never started would look active and deliver nothing.
    await deleteStream(c.env, id);
    throw error;
  }
  forgetStreams(projectId);
  const data = { ...(await summary(c.env, { ...row, credential })), delivered_seq: seq, ...(input.type === "webhook" ? { secret } : {}) };
  return c.json({ data }, 201);
});

documented(streams, createRoute({
  method: "get", path: "/", tags: ["Streams"], operationId: "listStreams", summary: "The project's streams", security: READ.security,
  responses: { 200: json(streamListSchema, "Every stream of the project, oldest first"), ...errors(...AUTH_ERRORS) },
}));
streams.get("/", READ.guard, async (c) => {
  const credential = c.get("credential");
  const rows = await listStreams(c.env, projectOf(credential), credential?.kind === "portal" ? credential.organization : undefined);
  return c.json({ data: await Promise.all(rows.map((row) => summary(c.env, row))) });
});

documented(streams, createRoute({
  method: "get", path: "/{id}", tags: ["Streams"], operationId: "getStream", summary: "One stream and where its delivery stands", security: READ.security,
  request: { params: idParam },
  responses: { 200: json(streamDetailResponseSchema, "The stream and its delivery"), ...errors(...AUTH_ERRORS, "NOT_FOUND") },
}));
streams.get("/:id", READ.guard, async (c) => {
  const row = await streamOf(c, c.req.param("id"));
  const delivery = await deliveryStub(c.env, row.id).status();
  return c.json({ data: { ...(await summary(c.env, row)), ...delivery } });
});

documented(streams, createRoute({
  method: "delete", path: "/{id}", tags: ["Streams"], operationId: "deleteStream", summary: "Stop a stream and forget it", security: ADMIN.security,
  description: "Recorded in the chain as witness.stream.deleted.",
  request: { params: idParam },
  responses: { 204: noContent("Deleted; nothing more is delivered"), ...errors(...AUTH_ERRORS, "NOT_FOUND") },
}));
streams.delete("/:id", ADMIN.guard, async (c) => {
  const projectId = projectOf(c.get("credential"));
  const row = await streamOf(c, c.req.param("id"));
  await deliveryStub(c.env, row.id).remove();
  await deleteStream(c.env, row.id, projectId);
  forgetStreams(projectId);
  await recordStreamAction(c, "deleted", row);
  return c.body(null, 204);
});

documented(streams, createRoute({
  method: "post", path: "/{id}/replay", tags: ["Streams"], operationId: "replayStream", summary: "Deliver again from a seq (re-enables a disabled stream)", security: ADMIN.security,
  description:
    "Events from from_seq on are sent again, in seq order; from_seq is at most the next event's seq. " +
    "A stream whose host STREAM_DESTINATIONS no longer allows cannot be replayed (400 on url). Recorded in the chain as witness.stream.replayed (from_seq).",
  request: { params: idParam, body: { required: true, content: { "application/json": { schema: replayStreamSchema.meta({ id: "StreamReplayRequest" }) } } } },
  responses: { 202: json(streamDetailResponseSchema, "Replay started; the stream and its delivery"), ...errors(...AUTH_ERRORS, "NOT_FOUND", ...BODY_ERRORS) },
}));
streams.post("/:id/replay", ADMIN.guard, async (c) => {
  const row = await streamOf(c, c.req.param("id"));
  const parsed = replayStreamSchema.safeParse(await readJsonObject(c));
  if (!parsed.success) throw validationError(toIssues(parsed.error));
  const { seq: head } = await ledgerAnchor(c.env, row.project_id);
  if (parsed.data.from_seq > head + 1) throw validationError([{ path: "from_seq", message: `from_seq is at most ${head + 1} (the next event's seq)` }]);
  // Delivery would refuse it anyway; say so now rather than re-enable a stream that cannot deliver.
  const url = new URL(row.url);
  if (!destinationAllowed(streamDestinations(c.env), url)) throw validationError([{ path: "url", message: `${notAllowedReason(url)}; delete the stream or ask the operator` }]);
  const stub = deliveryStub(c.env, row.id);
  await stub.replay(parsed.data.from_seq);
  await recordStreamAction(c, "replayed", row, { from_seq: parsed.data.from_seq });
  const fresh = await projectStream(c.env, row.project_id, row.id);
  return c.json({ data: { ...(await summary(c.env, fresh ?? row)), ...(await stub.status()) } }, 202);
});

for (const verb of ["pause", "resume"] as const) {
  const done = verb === "pause" ? "paused" : "resumed";
  documented(streams, createRoute({
    method: "post", path: `/{id}/${verb}`, tags: ["Streams"], operationId: `${verb}Stream`, security: ADMIN.security,
    summary: verb === "pause" ? "Stop delivering for now; the cursor stays" : "Deliver again from where a pause stopped",
    description: verb === "pause"
      ? "Nothing more is sent until resume (a batch already on its way ends first). status reads paused. A replay while paused moves the cursor and stays paused. " +
        "Pausing a paused stream changes nothing. Recorded in the chain as witness.stream.paused."
      : "Delivery goes on from delivered_seq, in seq order: nothing is lost, and only a batch the pause cut short is sent again (whole, with the same webhook-id). " +
        "Resuming a stream that is not paused changes nothing. Recorded in the chain as witness.stream.resumed.",
    request: { params: idParam },
    responses: { 200: json(streamDetailResponseSchema, "The stream and its delivery"), ...errors(...AUTH_ERRORS, "NOT_FOUND") },
  }));
  streams.post(`/:id/${verb}`, ADMIN.guard, async (c) => {
    const row = await streamOf(c, c.req.param("id"));
    const stub = deliveryStub(c.env, row.id);
    // Recorded only when it changed something; a resumed stream delivers its own record.
    if (await (verb === "pause" ? stub.pause() : stub.resume())) await recordStreamAction(c, done, row);
    forgetStreams(row.project_id);
    const fresh = await projectStream(c.env, row.project_id, row.id);
    return c.json({ data: { ...(await summary(c.env, fresh ?? row)), ...(await stub.status()) } });
  });
}

documented(streams, createRoute({
  method: "post", path: "/{id}/test", tags: ["Streams"], operationId: "testStream", summary: "Send a test event through the stream", security: ADMIN.security,
  description:
    "Records witness.stream.tested in the project's chain (organization: the stream's filter's, so a stream filtered to one organization carries it), " +
    "which the stream then delivers like any event: the whole path, receiver included, is tested, and the test is part of the audit trail. " +
    "A stream whose filter names actions that witness.stream.tested does not match will not deliver it. Answers the recorded event's id and seq.",
  request: { params: idParam },
  responses: {
    202: json(z.object({ data: z.object({ event_id: z.string(), seq: z.number() }) }), "Recorded; the stream delivers it like any event"),
    ...errors(...AUTH_ERRORS, "NOT_FOUND"),
  },
}));
streams.post("/:id/test", ADMIN.guard, async (c) => {
  const row = await streamOf(c, c.req.param("id"));
  const filter = JSON.parse(row.filter) as { organization?: string };
  const event = JSON.parse(await recordStreamAction(c, "tested", row, { test: true }, filter.organization ?? null)) as { id: string; seq: number };
  return c.json({ data: { event_id: event.id, seq: event.seq } }, 202);
});

export default streams;
