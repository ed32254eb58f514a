import type { Context } from "hono";
import { ApiError } from "./errors";
import { readCapped as readStreamCapped } from "./capped-read";
import { validationError } from "./validate";

/** Largest body we read: a full batch of 100 maximal events, with room to spare. */
export const MAX_BODY_BYTES = 2 * 1024 * 1024;

function bodyTooLarge(size: number, limit: number, atLeast: boolean) {
  const said = atLeast ? `more than ${limit}` : String(size);
  return new ApiError("EVENT_TOO_LARGE", `The request body is ${said} bytes; the limit is ${limit} bytes`, {
    field: "body",
    size,
    limit,
  });
}

/** One read per request: a route that peeks at the body and then parses it gets the same bytes. */
const bodies = new WeakMap<Request, Promise<Uint8Array>>();

/**
 * The body's bytes, never more than `limit` of them in memory: a declared
 * Content-Length over the limit is refused before anything is read; a body
 * without one (chunked) is read until it passes the limit, then the stream is
 * cancelled and the request refused (413 EVENT_TOO_LARGE, details.field "body").
 */
export function readBodyBytes(c: Context, limit = MAX_BODY_BYTES): Promise<Uint8Array> {
  const request = c.req.raw;
  let read = bodies.get(request);
  if (!read) {
    read = readCapped(request, limit);
    bodies.set(request, read);
  }
  return read;
}

async function readCapped(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get("Content-Length")?.trim();
  const framed = declared !== undefined && /^\d+$/.test(declared);
  if (framed && Number(declared) > limit) {
    // Nothing is read; cancelling tells the runtime the rest need not be received.
    await request.body?.cancel().catch(() => {});
    throw bodyTooLarge(Number(declared), limit, false);
  }
  if (!request.body) return new Uint8Array(0);
  if (framed) {
    // A declared length frames the body on the wire, so it is read in one go rather
    // than a promise per chunk; the check below only guards a caller that lied to us in-process.
    const bytes = new Uint8Array(await request.arrayBuffer());
    if (bytes.byteLength > limit) throw bodyTooLarge(bytes.byteLength, limit, false);
    return bytes;
  }
  const read = await readStreamCapped(request.body, limit);
  if ("over" in read) throw bodyTooLarge(read.over, limit, true);
  return read.bytes;
}

/** Stateless between whole-buffer decode() calls, so one serves every request. */
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** The body as text: UTF-8 as sent, or a 400 (an audit record is stored as sent or refused, never with U+FFFD). */
export async function readBodyText(c: Context, limit = MAX_BODY_BYTES): Promise<string> {
  const bytes = await readBodyBytes(c, limit);
  try {
    return STRICT_UTF8.decode(bytes);
  } catch {
    throw validationError([{ path: "", message: "The body is not valid UTF-8" }]);
  }
}

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
  const text = await readBodyText(c);
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
