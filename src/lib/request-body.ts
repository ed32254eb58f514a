import type { Context } from "hono";
import { ApiError } from "./errors";
import { validationError } from "./validate";

/** Largest body we read: a full batch of 100 maximal events, with room to spare. */
const MAX_BODY_BYTES = 2 * 1024 * 1024;

/** Reads a JSON object body: 415 without application/json, 400 for malformed JSON or a non-object. */
export async function readJsonObject(c: Context): Promise<Record<string, unknown>> {
  return (await readJsonBody(c)).body;
}

/** readJsonObject, also giving the body's text (an Idempotency-Key remembers what it was sent with). */
export async function readJsonBody(c: Context): Promise<{ body: Record<string, unknown>; text: string }> {
  const type = c.req.header("Content-Type") ?? "";
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    throw new ApiError("UNSUPPORTED_MEDIA_TYPE", "Send the body as JSON with Content-Type: application/json");
  }
  const text = await c.req.text();
  if (text.length > MAX_BODY_BYTES) {
    throw new ApiError("EVENT_TOO_LARGE", `The request body is ${text.length} bytes; the limit is ${MAX_BODY_BYTES} bytes`, {
      field: "body",
      size: text.length,
      limit: MAX_BODY_BYTES,
    });
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw validationError([{ path: "", message: "The body is not valid JSON" }]);
  }
  if (!body || typeof body !== "object" || Array.isArray(body)) {
    throw validationError([{ path: "", message: "The body must be a JSON object" }]);
  }
  return { body: body as Record<string, unknown>, text };
}
