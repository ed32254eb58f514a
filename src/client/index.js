// The Witness API client: dependency-free ESM for Node 18+, browsers and Workers.
// Types: index.d.ts, from api-types.ts (generated from the OpenAPI document by
// `npm run client:types`). Import it as `witness/client`.
import { loadCrypto } from "./web-crypto.js";

/** Statuses worth retrying: the request may succeed later, and nothing was stored. */
const RETRY_STATUS = new Set([408, 429, 500, 502, 503, 504]);

/** The one error of the client: an API error envelope, or a network failure (status 0). */
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

const sleepFor = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function randomKey() {
  // Plain-http browser pages have getRandomValues without crypto.subtle: the global first.
  const crypto = globalThis.crypto?.getRandomValues ? globalThis.crypto : await loadCrypto();
  if (crypto.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
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

async function errorOf(res) {
  const text = await res.text().catch(() => "");
  try {
    const { error } = JSON.parse(text);
    if (error && typeof error.code === "string") return new WitnessError(res.status, error.code, error.message, error.details ?? {});
  } catch {
    // not the JSON envelope
  }
  return new WitnessError(res.status, "HTTP_ERROR", text.slice(0, 200) || `HTTP ${res.status}`, {});
}

/**
 * createClient({ baseUrl, apiKey }): every method retries network errors, 408,
 * 429 and 5xx with exponential backoff and jitter, waiting at least what
 * Retry-After says; ingest sends one Idempotency-Key, kept across retries, so
 * a retried event is stored once.
 */
export function createClient(options) {
  const { baseUrl, apiKey } = options;
  if (!baseUrl) throw new TypeError("createClient needs a baseUrl");
  const fetchImpl = options.fetch ?? ((...args) => globalThis.fetch(...args));
  const retry = {
    retries: options.retries ?? 4,
    minDelayMs: options.minDelayMs ?? 250,
    maxDelayMs: options.maxDelayMs ?? 20_000,
  };
  const sleep = options.sleep ?? sleepFor;
  const root = baseUrl.replace(/\/+$/, "");

  /**
   * One API call; resolves with the Response of a 2xx, throws WitnessError otherwise.
   * once: the call is not idempotent (it mints a key), so only answers that say
   * nothing was done (408, 429) are retried, never a 5xx or a lost answer.
   */
  async function send(method, path, { query, body, headers = {}, auth = true, once = false } = {}) {
    const url = `${root}${path}${queryString(query)}`;
    const init = { method, headers: { Accept: "application/json", ...headers } };
    if (auth && apiKey) init.headers.Authorization = `Bearer ${apiKey}`;
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    for (let attempt = 0; ; attempt++) {
      let res;
      try {
        res = await fetchImpl(url, init);
      } catch (cause) {
        if (once || attempt >= retry.retries) {
          const error = new WitnessError(0, "NETWORK_ERROR", `${method} ${path} failed: ${cause?.message ?? cause}`, {});
          error.cause = cause;
          throw error;
        }
        await sleep(backoffMs(attempt, retry));
        continue;
      }
      if (res.ok || res.status === 304) return res;
      const retried = once ? res.status === 408 || res.status === 429 : RETRY_STATUS.has(res.status);
      if (!retried || attempt >= retry.retries) throw await errorOf(res);
      const wait = retryAfterMs(res.headers.get("Retry-After"));
      await res.body?.cancel().catch(() => {});
      await sleep(Math.max(wait ?? 0, backoffMs(attempt, retry)));
    }
  }

  async function data(method, path, init) {
    const res = await send(method, path, init);
    return (await res.json()).data;
  }

  const enc = encodeURIComponent;

  async function* pages(path, query) {
    let cursor = query.cursor;
    for (;;) {
      const res = await send("GET", path, { query: { ...query, cursor } });
      const page = await res.json();
      for (const event of page.data) yield event;
      if (!page.nextCursor) return;
      cursor = page.nextCursor;
    }
  }

  async function publicKeys() {
    const res = await send("GET", "/.well-known/witness-keys.json", { auth: false });
    return res.text();
  }

  return {
    events: {
      async create(event, opts = {}) {
        const key = opts.idempotencyKey ?? (await randomKey());
        return data("POST", "/v1/events", { body: event, headers: { "Idempotency-Key": key } });
      },
      async createBatch(events, opts = {}) {
        const key = opts.idempotencyKey ?? (await randomKey());
        return data("POST", "/v1/events/batch", { body: { events }, headers: { "Idempotency-Key": key } });
      },
      get: (id) => data("GET", `/v1/events/${enc(id)}`),
      list: (query = {}) => pages("/v1/events", query),
      search: (q, query = {}) => pages("/v1/events/search", { ...query, q }),
      verify: (query = {}) => data("GET", "/v1/events/verify", { query }),
    },
    exports: {
      async download(query) {
        const res = await send("GET", "/v1/exports", { query, headers: { Accept: "*/*" } });
        return res.body;
      },
    },
    receipts: {
      /** The signed receipt of one of the project's events. */
      get: (eventId) => data("GET", `/v1/events/${enc(eventId)}/receipt`),
      /** The public check of an event (no credential needed). */
      status: (eventId) => data("GET", `/v1/receipts/${enc(eventId)}`, { auth: false }),
      /**
       * Checks a receipt's Ed25519 proof and transparency log proof locally, and
       * that it says the event was intact (valid: true). receipt: preferably the
       * JSON text as received (duplicate keys fail it; a parsed object has lost
       * them), or the receipt object; either bare or in its { data } envelope.
       * keys: the witness-keys.json text or object, a JWK, `<kid>:<x>`; when
       * omitted they are fetched from this deployment's /.well-known/witness-keys.json.
       */
      async verifyOffline(receipt, keys) {
        // receipt-check.js is src/scripts/receipt-check.mjs bundled with src/log (npm run
        // client:bundle): plain JavaScript, so no TypeScript support is needed to run it.
        const [check] = await Promise.all([import("./receipt-check.js"), loadCrypto()]);
        const text = keys === undefined ? await publicKeys() : typeof keys === "string" ? keys : JSON.stringify(keys);
        return check.verifyReceipt(typeof receipt === "string" ? receipt : check.unwrapReceipt(receipt), check.parsePublicKeys(text));
      },
    },
    actors: {
      erase: (id, opts = {}) => data("DELETE", `/v1/actors/${enc(id)}`, { query: { by: opts.by, organization: opts.organization } }),
    },
    embed: {
      createToken: (request = {}) => data("POST", "/v1/embed/token", { body: request }),
    },
    keys: {
      /** A new key ({ scopes, label?, expires_at? }); the answer's `key` is its only showing. Needs an admin key. */
      create: (request) => data("POST", "/v1/keys", { body: request, once: true }),
      /** Every key of the project, newest first, revoked ones included; never a secret. */
      list: () => data("GET", "/v1/keys"),
      /** Revokes a key by its prefix; it stops working within 10 seconds. */
      revoke: (prefix) => data("DELETE", `/v1/keys/${enc(prefix)}`),
    },
  };
}
