// The client's one request path: retries, backoff, and turning whatever came back
// (the API's envelope, a proxy's HTML page, a cut connection) into one WitnessError.

/** Statuses worth retrying: the request may succeed later, and nothing was stored. */
const RETRY_STATUS = new Set([408, 429, 500, 502, 503, 504]);

/**
 * The one error of the client. code: the API's own code from its error envelope;
 * HTTP_ERROR for an error status without the envelope (a proxy's 502 page, a wrong
 * address's 404); BAD_RESPONSE for a success that is not the API's JSON (an HTML
 * page: baseUrl names something else); NETWORK_ERROR (status 0) when no whole
 * answer came (refused, reset, cut mid-body).
 */
export class WitnessError extends Error {
  constructor(status, code, message, details = {}) {
    super(message);
    this.name = "WitnessError";
    this.status = status;
    this.code = code;
    this.details = details;
    // A 403 names the scope the key lacks (ingest, read or admin): the fix is a key that holds it.
    this.requiredScope = typeof details?.required_scope === "string" ? details.required_scope : null;
  }
}

/** Seconds (or an HTTP date) of a Retry-After header, in milliseconds; null when absent or unreadable. */
export function retryAfterMs(value, now = Date.now()) {
  if (value === null || value === undefined || value === "") return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** Exponential backoff with jitter: half the capped step, plus a random part of the other half. */
export function backoffMs(attempt, { minDelayMs, maxDelayMs }, random = Math.random) {
  const step = Math.min(maxDelayMs, minDelayMs * 2 ** attempt);
  return step / 2 + random() * (step / 2);
}

/** The deployment's root: a trailing slash or /v1 (as the API docs write the base address) dropped. */
export function rootOf(baseUrl) {
  return String(baseUrl).replace(/\/+$/, "").replace(/\/v1$/i, "");
}

function queryString(query = {}) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    params.set(key, Array.isArray(value) ? value.join(",") : String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

/** What an answer that is not the API's was, for the error's details: enough to see a proxy page. */
function foreign(res, text) {
  return { content_type: res.headers.get("Content-Type"), body: text.slice(0, 200) };
}

function errorOf(res, text, call) {
  try {
    const { error } = JSON.parse(text);
    if (error && typeof error.code === "string") return new WitnessError(res.status, error.code, error.message, error.details ?? {});
  } catch {
    // not the JSON envelope
  }
  return new WitnessError(res.status, "HTTP_ERROR", `${call} answered ${res.status} without the API's error envelope: ${text.slice(0, 200) || "(empty body)"}`, foreign(res, text));
}

/** A 2xx body as the API's JSON envelope ({ data, ... }), or BAD_RESPONSE. */
function envelopeOf(res, text, call) {
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    // a proxy's or another site's page
  }
  if (body && typeof body === "object" && "data" in body) return body;
  const type = res.headers.get("Content-Type") ?? "no content type";
  return new WitnessError(res.status, "BAD_RESPONSE", `${call} answered ${res.status} (${type}), not the Witness API's JSON: is baseUrl the deployment's address?`, foreign(res, text));
}

const sleepFor = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * send(method, path, init): resolves with the Response of a 2xx (or 304), or with
 * its body when init.as is "envelope" (the parsed { data, ... }) or "text"; throws
 * WitnessError otherwise. Reading the body is part of the attempt, so an answer
 * cut mid-body is retried like a refused connection.
 * once: the call is not idempotent (it mints a key), so only answers that say
 * nothing was done (408, 429) are retried, never a 5xx or a lost answer.
 */
export function createTransport({ baseUrl, apiKey, fetch: fetchImpl, retries = 4, minDelayMs = 250, maxDelayMs = 20_000, sleep = sleepFor }) {
  const root = rootOf(baseUrl);
  const doFetch = fetchImpl ?? ((...args) => globalThis.fetch(...args));
  const retry = { retries, minDelayMs, maxDelayMs };

  return async function send(method, path, { query, body, headers = {}, auth = true, once = false, as } = {}) {
    const call = `${method} ${path}`;
    const url = `${root}${path}${queryString(query)}`;
    const init = { method, headers: { Accept: "application/json", ...headers } };
    if (auth && apiKey) init.headers.Authorization = `Bearer ${apiKey}`;
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    for (let attempt = 0; ; attempt++) {
      let res;
      let text;
      try {
        res = await doFetch(url, init);
        if (as || !(res.ok || res.status === 304)) text = await res.text();
      } catch (cause) {
        if (once || attempt >= retry.retries) {
          const what = res ? `${call} answered ${res.status}, then the connection broke` : `${call} failed`;
          const error = new WitnessError(0, "NETWORK_ERROR", `${what}: ${cause?.message ?? cause}`, {});
          error.cause = cause;
          throw error;
        }
        await sleep(backoffMs(attempt, retry));
        continue;
      }
      if (res.ok || res.status === 304) {
        if (!as) return res;
        if (as === "text") return text;
        const envelope = envelopeOf(res, text, call);
        if (envelope instanceof WitnessError) throw envelope;
        return envelope;
      }
      const retried = once ? res.status === 408 || res.status === 429 : RETRY_STATUS.has(res.status);
      if (!retried || attempt >= retry.retries) throw errorOf(res, text, call);
      const wait = retryAfterMs(res.headers.get("Retry-After"));
      await sleep(Math.max(wait ?? 0, backoffMs(attempt, retry)));
    }
  };
}
