import type { Context } from "hono";
import { ingestLimit, rateLimited } from "./rate-limit";
import type { NewEvent } from "../model/new-event";
import type { AppEnv } from "./app-env";
import { sha256Hex } from "../lib/crypto";
import { ApiError } from "../lib/errors";
import { ledgerOf, packEvents } from "../chain/ledger";
import { validationError } from "../lib/validate";
import { apiKeyOf } from "./credential";

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

/** Hands validated events to the project's ledger, which chains and stores them; returns each one's JSON. */
export async function appendEvents(c: Context<AppEnv>, events: NewEvent[], bodyText: string): Promise<string[]> {
  const credential = apiKeyOf(c.get("credential"), "Ingest needs an API key");
  const ledger = ledgerOf(c.env, credential.projectId);
  const key = idempotencyKey(c);
  const result = await ledger.append({
    events: packEvents(events),
    idempotencyKey: key,
    // Only a keyed request needs it: a retry must send the body it was first sent with.
    requestHash: key === null ? null : await sha256Hex(bodyText),
    keyPrefix: credential.prefix,
    rateLimit: ingestLimit(c.env),
  });
  c.set("rate", result.rate);
  if (result.status === "rate_limited") throw rateLimited(result.rate);
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
