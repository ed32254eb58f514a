import type { Context, MiddlewareHandler } from "hono";
import { ingestLimit, rateLimited } from "./rate-limit";
import type { NewEvent } from "../model/new-event";
import type { AppEnv } from "./app-env";
import { sha256Hex } from "../lib/crypto";
import { ApiError } from "../lib/errors";
import { ledgerOf, packEvents } from "../chain/ledger";
import { MAX_QUEUED_BYTES } from "../chain/ingest-admission";
import type { AppendResult } from "../chain/idempotent-appends";
import { findIdempotent } from "../chain/idempotency";
import { findLandedAppend } from "../chain/landed-appends";
import { databaseRefusal, isOverloaded } from "../lib/database-refusal";
import { eventJson } from "../model/event-shape";
import { eventsDb, eventsReadDb } from "../storage/shards";
import { validationError } from "../lib/validate";
import { apiKeyOf } from "./credential";
import { catalogFor, checkEvents, forgetCatalog, UnknownVersionError, type Catalog } from "../catalog/catalog-cache";

/**
 * What of one project's ingest this isolate may have waiting on its ledger
 * at once: requests, and the bytes of their bodies (Content-Length; 1 MiB
 * when a request does not say; a body is at most 2 MiB). A ledger that
 * falls behind holds requests open; without a bound, a burst piles them up
 * in the isolate, each holding its body, until memory goes (an isolate has
 * 128 MB). The ledger's own
 * bounds (src/chain/ingest-admission.ts) only see what reaches it. Far above
 * what concurrent clients of a healthy ledger have waiting (hundreds of
 * single events), so only a ledger that fell behind meets it.
 */
export const MAX_WAITING_APPENDS = 512;
/**
 * About the ledger's queue of 10,000 events in bodies of typical events (~300 bytes each): a burst of
 * batches meets it after a dozen or so full commits' worth, while hundreds of concurrent single events
 * (a healthy ledger's traffic) stay far under it. Never above the ledger's own bound in bytes.
 */
export const MAX_WAITING_BYTES = Math.min(4 * 1024 * 1024, MAX_QUEUED_BYTES);
const UNSAID_LENGTH = 1024 * 1024;
const waiting = new Map<string, { requests: number; bytes: number }>();

/**
 * Before the body is read: refuses (429 ledger_busy, nothing stored) an
 * ingest request that would take this isolate past either bound for the
 * project, so a refusal costs next to nothing.
 */
export const ingestDoor: MiddlewareHandler<AppEnv> = async (c, next) => {
  const { projectId } = apiKeyOf(c.get("credential"), "Ingest needs an API key");
  const said = Number(c.req.header("Content-Length"));
  const bytes = Number.isSafeInteger(said) && said >= 0 ? said : UNSAID_LENGTH;
  const now = waiting.get(projectId) ?? { requests: 0, bytes: 0 };
  if (now.requests >= MAX_WAITING_APPENDS || (now.requests > 0 && now.bytes + bytes > MAX_WAITING_BYTES)) {
    c.header("Retry-After", "1");
    throw new ApiError(
      "RATE_LIMITED",
      `This project's ledger is behind: ${now.requests} ingest requests (${Math.round(now.bytes / 1024)} KiB) already wait on it here; nothing was stored, retry in 1 s`,
      { reason: "ledger_busy", limit: MAX_WAITING_APPENDS, retry_after: 1 },
    );
  }
  waiting.set(projectId, { requests: now.requests + 1, bytes: now.bytes + bytes });
  try {
    await next();
  } finally {
    const left = waiting.get(projectId)!;
    if (left.requests === 1) waiting.delete(projectId);
    else waiting.set(projectId, { requests: left.requests - 1, bytes: left.bytes - bytes });
  }
};

export function requestContext(req: Request) {
  return { ip_address: req.headers.get("CF-Connecting-IP"), user_agent: req.headers.get("User-Agent") };
}

function idempotencyKey(c: Context<AppEnv>): string | null {
  const key = c.req.header("Idempotency-Key");
  if (key === undefined) return null;
  if (key.length < 1 || key.length > 255) {
    throw validationError([{ path: "Idempotency-Key", message: "Idempotency-Key must be 1 to 255 characters" }]);
  }
  return key;
}

/** How often ingest checks again after the catalog changed under it before answering 503. */
const CATALOG_TRIES = 3;

/**
 * Checks the events against the project's catalog (src/catalog/), refusing
 * them under `enforce` with the issues of the first that breaks its schema.
 * In a batch the paths name the event (`events.3.metadata.role`).
 */
async function checkAgainst(c: Context<AppEnv>, projectId: string, catalog: Catalog, events: NewEvent[], asked: Array<number | null>, batch: boolean): Promise<void> {
  const at = (index: number) => (batch ? `events.${index}.` : "");
  try {
    const refusal = await checkEvents(c.env, projectId, catalog, events, asked);
    if (refusal === null) return;
    const issues = refusal.issues.map((i) => ({ path: at(refusal.index) + i.path, message: i.message }));
    const first = issues[0];
    const action = events[refusal.index].action;
    const against = refusal.schema_version === null ? "its project's catalog" : `version ${refusal.schema_version} of its schema`;
    throw new ApiError("VALIDATION_ERROR", `${first.path}: ${first.message} (the event breaks ${against}; ${action})`, {
      issues,
      schema_version: refusal.schema_version,
      action,
      ...(batch ? { index: refusal.index } : {}),
    });
  } catch (error) {
    if (!(error instanceof UnknownVersionError)) throw error;
    throw validationError([{ path: `${at(error.index)}version`, message: error.message }]);
  }
}

/** Hands validated events to the project's ledger, which chains and stores them; returns each one's JSON. */
export async function appendEvents(c: Context<AppEnv>, events: NewEvent[], bodyText: string, batch = false): Promise<string[]> {
  const credential = apiKeyOf(c.get("credential"), "Ingest needs an API key");
  const ledger = ledgerOf(c.env, credential.projectId);
  const key = idempotencyKey(c);
  // Only a keyed request needs it: a retry must send the body it was first sent with.
  const requestHash = key === null ? null : await sha256Hex(bodyText);
  // Any cached copy will do: the ledger refuses one older than its own, and then it is fetched again.
  let catalog = await catalogFor(c.env, credential.projectId, Number.POSITIVE_INFINITY);
  // parseEvent left each event's requested `version` where the checked one goes.
  const asked = events.map((e) => e.schema_version ?? null);
  for (let tries = 1; ; tries++) {
    try {
      await checkAgainst(c, credential.projectId, catalog, events, asked, batch);
    } catch (error) {
      // A retry of a request stored before the catalog refused such events still gets its first answer.
      const replay = key === null ? null : await replayed(c, credential.projectId, key, requestHash, catalog);
      if (replay) return replay;
      throw error;
    }
    const token = crypto.randomUUID();
    const sentAt = Date.now();
    let result: AppendResult;
    try {
      result = await ledger.append({
        events: packEvents(events),
        idempotencyKey: key,
        requestHash,
        keyPrefix: credential.prefix,
        rateLimit: ingestLimit(c.env),
        catalogRevision: catalog.revision,
        bytes: bodyText.length,
        sentAt,
        token,
      });
    } catch (error) {
      return landedAnyway(c, credential.projectId, token, sentAt, error, catalog);
    }
    if (result.status !== "catalog_stale") return answered(c, result, key);
    forgetCatalog(credential.projectId);
    if (tries === CATALOG_TRIES) {
      c.header("Retry-After", "1");
      throw new ApiError("CONFLICT", "The project's action catalog changed while this request was being checked against it, again and again; nothing was stored, retry in a second");
    }
    catalog = await catalogFor(c.env, credential.projectId, 0);
  }
}

/**
 * After the call to the ledger failed: the append's events if its commit
 * landed all the same (the ledger stopped after its commit and before it
 * answered), or the failure, now true (the append was given up). The ledger
 * is asked first: it answers for the appends it holds and looks in D1 for the
 * rest (LedgerChainRpc.lostAppend). When it cannot be reached either, the
 * worker looks in D1 itself (landed-appends.ts), which gives the append up.
 */
async function landedAnyway(c: Context<AppEnv>, projectId: string, token: string, sentAt: number, error: unknown, catalog: Catalog): Promise<string[]> {
  // Refused by the runtime before the ledger ran, or by a full or overloaded database (app.ts answers 429 for
  // both): nothing was stored, and a full database would refuse the look's own write too.
  if (isOverloaded(error) || databaseRefusal(error)) throw error;
  let landed: string[] | null;
  try {
    landed = await ledgerOf(c.env, projectId)
      .lostAppend(token, sentAt)
      .catch(async (askError: unknown) => {
        console.warn(`[${c.get("requestId")}] append failed (${String(error)}); the ledger could not be asked whether it was stored (${String(askError)}): looking in D1`);
        const rows = await findLandedAppend(await eventsDb(c.env, projectId), projectId, token, sentAt, "worker");
        return rows === null ? null : rows.map((row) => eventJson(row, catalog.display));
      });
  } catch (lookError) {
    // Neither found nor given up: the commit may land yet, so "stored nothing" would not be true.
    console.error(`[${c.get("requestId")}] append failed (${String(error)}) and could not be looked for: ${String(lookError)}`);
    throw new ApiError(
      "INTERNAL_ERROR",
      "The project's ledger failed while storing these events and whether they were stored is not known yet; " +
        "send the request again with the same Idempotency-Key, or look for the events before sending them again",
      { request_id: c.get("requestId") },
    );
  }
  if (landed === null) throw error;
  return landed;
}

/** The first answer of an Idempotency-Key sent with this same body, or null. */
async function replayed(c: Context<AppEnv>, projectId: string, key: string, requestHash: string | null, catalog: Catalog): Promise<string[] | null> {
  const earlier = await findIdempotent(c.env, await eventsReadDb(c.env, projectId), projectId, key);
  if (!earlier || earlier.requestHash !== requestHash) return null;
  c.header("Idempotent-Replayed", "true");
  return earlier.rows.map((row) => eventJson(row, catalog.display));
}

function answered(c: Context<AppEnv>, result: Exclude<AppendResult, { status: "catalog_stale" }>, key: string | null): string[] {
  c.set("rate", result.rate);
  if (result.status === "rate_limited") throw rateLimited(result.rate);
  if (result.status === "overloaded") {
    const { reason, retryAfter, limit } = result.refusal;
    c.set("rate", { ...result.rate, allowed: false, retryAfter });
    throw new ApiError(
      "RATE_LIMITED",
      reason === "project_events"
        ? `This project's ingest budget of ${limit.toLocaleString("en-US")} events per minute is spent; nothing was stored, retry in ${retryAfter} s`
        : result.refusal.waitedMs !== undefined
          ? `This project's ledger is behind: the request waited ${(result.refusal.waitedMs / 1000).toFixed(1)} s to reach it; nothing was stored, retry in ${retryAfter} s`
          : `This project's ledger has more events waiting to be committed than it queues (${limit.toLocaleString("en-US")}); nothing was stored, retry in ${retryAfter} s`,
      { reason, retry_after: retryAfter, limit },
    );
  }
  if (result.status === "key_reused") {
    throw new ApiError(
      "IDEMPOTENCY_KEY_REUSED",
      "This Idempotency-Key was already used with a different request body; use a new key for a new request",
      { idempotency_key: key },
    );
  }
  if (result.status === "replayed") c.header("Idempotent-Replayed", "true");
  return result.events;
}
