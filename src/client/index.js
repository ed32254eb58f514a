// The Witness API client: dependency-free ESM for Node 18+, browsers and Workers,
// packaged on its own (package.json here: `npm pack` in src/client). Types:
// index.d.ts, from api-types.d.ts (generated from the OpenAPI document by
// `npm run client:types`).
import { createTransport, WitnessError } from "./http.js";
import { loadCrypto } from "./web-crypto.js";

export { backoffMs, retryAfterMs, WitnessError } from "./http.js";

async function randomKey() {
  // Plain-http browser pages have getRandomValues without crypto.subtle: the global first.
  const crypto = globalThis.crypto?.getRandomValues ? globalThis.crypto : await loadCrypto();
  if (crypto.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * createClient({ baseUrl, apiKey }): every method retries network errors, 408,
 * 429 and 5xx with exponential backoff and jitter, waiting at least what
 * Retry-After says; ingest sends one Idempotency-Key, kept across retries, so
 * a retried event is stored once. baseUrl: the deployment, with or without /v1.
 */
export function createClient(options) {
  if (!options?.baseUrl) throw new TypeError("createClient needs a baseUrl");
  const send = createTransport(options);

  async function data(method, path, init = {}) {
    return (await send(method, path, { ...init, as: "envelope" })).data;
  }

  const enc = encodeURIComponent;

  async function* pages(path, query) {
    let cursor = query.cursor;
    for (;;) {
      const page = await send("GET", path, { query: { ...query, cursor }, as: "envelope" });
      if (!Array.isArray(page.data)) throw new WitnessError(200, "BAD_RESPONSE", `GET ${path} answered a page without a data list`, {});
      for (const event of page.data) yield event;
      if (!page.nextCursor) return;
      cursor = page.nextCursor;
    }
  }

  const publicKeys = () => send("GET", "/.well-known/witness-keys.json", { auth: false, as: "text" });

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
