// The Witness API client: dependency-free ESM for Node 18+, browsers and Workers,
// packaged on its own (package.json here: `npm pack` in src/client). Types:
// index.d.ts, from api-types.d.ts (generated from the OpenAPI document by
// `npm run client:types`).
import { createTransport, WitnessError } from "./http.js";
import { loadCrypto } from "./web-crypto.js";

export { backoffMs, retryAfterMs, WitnessError } from "./http.js";

/** feed({ follow: true }) long-polls this long (the API's most) unless given a wait. */
const FOLLOW_WAIT_S = 25;
/** feed({ follow: true, wait: 0 }): the pause between answers at the head. */
const IDLE_POLL_MS = 1000;

/** A parameter the client refuses before sending, with the API's VALIDATION_ERROR (details.issues). */
function invalid(path, message) {
  throw new WitnessError(400, "VALIDATION_ERROR", `${path}: ${message}`, { issues: [{ path, message }] });
}

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
  const pause = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));

  async function data(method, path, init = {}) {
    return (await send(method, path, { ...init, as: "envelope" })).data;
  }

  /**
   * One path segment: percent-encoded (an action's dots stay, its "/", "?", "#" and
   * "%" are escaped), and never empty, "." or "..": URL parsing drops or resolves
   * those (%2E too), so the request would reach another route (GET /v1/schemas/..
   * is GET /v1) and answer something else. Refused before sending, as the API
   * refuses an invalid parameter.
   */
  const enc = (value, name = "id") => {
    const text = String(value);
    if (text === "") invalid(name, `${name} must not be empty`);
    if (text === "." || text === "..") invalid(name, `${name} "${text}" cannot be named in a URL path`);
    return encodeURIComponent(text);
  };

  async function* pages(path, query) {
    let cursor = query.cursor;
    for (;;) {
      const page = await send("GET", path, { query: { ...query, cursor }, as: "envelope" });
      if (!Array.isArray(page.data)) throw new WitnessError(200, "BAD_RESPONSE", `GET ${path} answered a page without a data list`, {});
      for (const item of page.data) yield item;
      if (!page.nextCursor) return;
      cursor = page.nextCursor;
    }
  }

  /** One answer of the feed, checked: a page without its cursor would start the feed over. */
  async function feedPage(query = {}) {
    const page = await send("GET", "/v1/events/feed", { query, as: "envelope" });
    if (!Array.isArray(page.data) || typeof page.nextCursor !== "string" || typeof page.at_head !== "boolean") {
      throw new WitnessError(200, "BAD_RESPONSE", "GET /v1/events/feed answered a page without data, nextCursor and at_head", {});
    }
    return page;
  }

  /**
   * The feed, page after page from `after` (or `since`, or the first event): each
   * page's events, then onPage with where the next page starts, so a collector that
   * saves nextCursor there has handled every event before it. Ends at the head, or
   * with follow polls on (long polls of `wait` seconds) until the consumer stops.
   */
  async function* feed({ onPage, follow = false, ...query } = {}) {
    if (follow) query.wait ??= FOLLOW_WAIT_S;
    for (;;) {
      const page = await feedPage(query);
      for (const event of page.data) yield event;
      if (onPage) await onPage({ nextCursor: page.nextCursor, gaps: page.gaps ?? [], at_head: page.at_head });
      if (page.at_head && !follow) return;
      // Right after this answer; since only says where the first one starts.
      query = { ...query, after: page.nextCursor, since: undefined };
      // wait 0: the API answers at once, so an idle follower asks once a second, not in a busy loop.
      if (page.at_head && page.data.length === 0 && Number(query.wait) === 0) await pause(IDLE_POLL_MS);
    }
  }

  /** Lazily, so an id no URL can name is refused when iterating starts, as the other methods refuse it when called. */
  async function* firings(id, query) {
    yield* pages(`/v1/alerts/${enc(id)}/firings`, query);
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
      get: async (id) => data("GET", `/v1/events/${enc(id)}`),
      list: (query = {}) => pages("/v1/events", query),
      search: (q, query = {}) => pages("/v1/events/search", { ...query, q }),
      verify: (query = {}) => data("GET", "/v1/events/verify", { query }),
      /** Every event in chain order, resuming from a saved nextCursor (after); see feed above. */
      feed: (options = {}) => feed(options),
      /** One answer of the feed as it came: { data, gaps, nextCursor, at_head }. */
      feedPage: (query = {}) => feedPage(query),
    },
    exports: {
      async download(query) {
        const res = await send("GET", "/v1/exports", { query, headers: { Accept: "*/*" } });
        return res.body;
      },
    },
    receipts: {
      /** The signed receipt of one of the project's events. */
      get: async (eventId) => data("GET", `/v1/events/${enc(eventId)}/receipt`),
      /** The public check of an event (no credential needed). */
      status: async (eventId) => data("GET", `/v1/receipts/${enc(eventId)}`, { auth: false }),
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
      erase: async (id, opts = {}) => data("DELETE", `/v1/actors/${enc(id)}`, { query: { by: opts.by, organization: opts.organization } }),
      /** The erasures recorded for this id (by: "email": this e-mail), oldest first; [] when none. */
      erasures: async (id, opts = {}) => data("GET", `/v1/actors/${enc(id)}/erasures`, { query: { by: opts.by } }),
    },
    portal: {
      /** A one-time link to a customer's admin portal for one organization (admin); its url is in this answer only. Never retried. */
      createLink: (request) => data("POST", "/v1/portal/links", { body: request, once: true }),
    },
    embed: {
      createToken: (request = {}) => data("POST", "/v1/embed/token", { body: request }),
    },
    actions: {
      /** Every action the project has recorded, in name order, with its count and first and last hour, page after page. */
      list: (query = {}) => pages("/v1/actions", query),
    },
    schemas: {
      /**
       * Adds the next version of an action's schema (admin). Every PUT makes a new
       * version, so it is not retried after a 5xx or a lost answer: read the action's
       * newest version (its sha256) before sending it again.
       */
      put: async (action, document) => data("PUT", `/v1/schemas/${enc(action, "action")}`, { body: document, once: true }),
      /** Every action with a schema, its newest version each, in action order, page after page. */
      list: (query = {}) => pages("/v1/schemas", query),
      /** An action's newest schema, with every version (oldest first). */
      get: async (action) => data("GET", `/v1/schemas/${enc(action, "action")}`),
      /** One version of an action's schema, from 1. */
      version: async (action, version) => data("GET", `/v1/schemas/${enc(action, "action")}/versions/${enc(version, "version")}`),
    },
    catalog: {
      /** How ingest checks events against the catalog (mode off until changed). */
      settings: () => data("GET", "/v1/catalog/settings"),
      /** Sets the mode (and unknown_actions, "allow" unless given); answers the settings now in force. Admin. */
      setSettings: (settings) => data("PUT", "/v1/catalog/settings", { body: settings }),
    },
    alerts: {
      /**
       * A new rule (admin); a webhook channel's `secret` is in this answer only. Not retried
       * after a 5xx or a lost answer (each POST makes a rule): list the rules before sending it again.
       */
      create: (rule) => data("POST", "/v1/alerts", { body: rule, once: true }),
      /** Every rule, the project's integrity rule included, oldest first; not paged. */
      list: () => data("GET", "/v1/alerts"),
      get: async (id) => data("GET", `/v1/alerts/${enc(id)}`),
      /** Fields given replace the rule's; channels, when given, replace all of them (new secrets, in this answer). */
      update: async (id, patch) => data("PATCH", `/v1/alerts/${enc(id)}`, { body: patch }),
      /** Answers the rule as it was. */
      delete: async (id) => data("DELETE", `/v1/alerts/${enc(id)}`),
      /** A test notification on every channel, sent at once; never retried (each call notifies). */
      test: async (id) => data("POST", `/v1/alerts/${enc(id)}/test`, { once: true }),
      /** When the rule fired, newest first, page after page. */
      firings: (id, query = {}) => firings(id, query),
    },
    keys: {
      /** A new key ({ scopes, label?, expires_at? }); the answer's `key` is its only showing. Needs an admin key. */
      create: (request) => data("POST", "/v1/keys", { body: request, once: true }),
      /** Every key of the project, newest first, revoked ones included; never a secret. */
      list: () => data("GET", "/v1/keys"),
      /** Revokes a key by its prefix; it stops working within 10 seconds. */
      revoke: async (prefix) => data("DELETE", `/v1/keys/${enc(prefix, "prefix")}`),
    },
  };
}
