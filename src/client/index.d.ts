// Types of the Witness client (index.js). Every API shape comes from
// api-types.d.ts, generated from the OpenAPI document: nothing is written twice.
// Relative imports carry .js so they resolve under nodenext and node16 as under bundler.
import type { components, operations } from "./api-types.js";

type Schemas = components["schemas"];
type Query<Op extends keyof operations> = NonNullable<operations[Op]["parameters"]["query"]>;

export type Event = Schemas["Event"];
export type EventInput = Schemas["EventInput"];
export type ErrorCode = Schemas["ErrorCode"];
export type Receipt = Schemas["Receipt"];
export type ReceiptStatus = Schemas["ReceiptStatus"]["data"];
export type VerifyReport = Schemas["VerifyResponse"]["data"];
export type Erasure = Schemas["ErasureResponse"]["data"];
export type EmbedTokenRequest = Schemas["EmbedTokenRequest"];
export type EmbedToken = Schemas["EmbedTokenResponse"]["data"];
/** What an API key may do: ingest (send events), read (every read), admin (everything, keys included). */
export type Scope = Schemas["ApiKeyInfo"]["scopes"][number];
export type ApiKeyRequest = Schemas["ApiKeyCreateRequest"];
export type ApiKey = Schemas["ApiKeyInfo"];
export type ApiKeyCreated = Schemas["ApiKeyCreated"]["data"];
/** One before/after value an event sent in `changes` (either side may be absent). */
export type Change = Schemas["Change"];
/** An action the project has recorded: its count, first and last hour, and newest schema version (null: none). */
export type ActionSummary = Schemas["ActionPage"]["data"][number];
/** What PUT /v1/schemas/{action} takes: a metadata JSON Schema, targets, actor types, changes fields, display template. */
export type SchemaDocument = Schemas["SchemaDocument"];
/** One immutable version of an action's schema. */
export type ActionSchema = Schemas["ActionSchema"];
/** An action's newest schema, with `versions`: every version (oldest first), without its document. */
export type SchemaDetail = operations["getSchema"]["responses"][200]["content"]["application/json"]["data"];
export type SchemaVersionInfo = SchemaDetail["versions"][number];
export type CatalogMode = Schemas["CatalogSettings"]["mode"];
export type CatalogSettings = Schemas["CatalogSettings"];
/** unknown_actions may be left out: it is then "allow". */
export type CatalogSettingsInput = Omit<CatalogSettings, "unknown_actions"> & Partial<Pick<CatalogSettings, "unknown_actions">>;
/** One answer of GET /v1/events/feed: events in seq order, the seqs it passed with no event, where the next starts. */
export type FeedPage = Schemas["FeedPage"];
/** Seqs with no event: retention (purged under a signed retention record) or missing (see events.verify). */
export type FeedGap = FeedPage["gaps"][number];
/** What onPage is told after a page's events: nextCursor (save it to resume there), gaps, at_head. */
export type FeedPosition = Omit<FeedPage, "data">;
/** An alert rule, its channels (webhook, Slack, Teams, PagerDuty) each with its delivery state; never a secret but in create and update answers. */
export type AlertRule = Schemas["AlertRule"];
export type AlertChannel = AlertRule["channels"][number];
export type AlertMatch = Schemas["AlertMatch"];
export type AlertThreshold = Schemas["AlertThreshold"];
export type AlertChannelInput = Schemas["AlertChannelInput"];
type AlertDefaults = "cooldown_seconds" | "enabled" | "kind";
/** cooldown_seconds (0), enabled (true) and kind ("events") may be left out. */
export type AlertRuleInput = Omit<Schemas["AlertRuleInput"], AlertDefaults> & Partial<Pick<Schemas["AlertRuleInput"], AlertDefaults>>;
export type AlertRulePatch = Schemas["AlertRulePatch"];
/** One firing of a rule: why, the first 20 events behind it, and each channel's delivery. */
export type AlertFiring = Schemas["AlertFiring"];
type Paging = { cursor?: string; limit?: number | string };
export type ListQuery = Omit<Query<"listEvents">, "cursor" | "limit"> & Paging;
export type SearchQuery = Omit<Query<"searchEvents">, "q" | "cursor" | "limit"> & Paging;
export type VerifyQuery = Query<"verifyEvents">;
export type ExportQuery = Query<"exportEvents">;
export type EraseOptions = Query<"eraseActor">;
export type ErasuresOptions = Query<"listActorErasures">;
export type ActorErasure = Schemas["ActorErasure"];
export type PortalLinkInput = Schemas["PortalLinkInput"];
export type PortalLink = Schemas["PortalLink"];
export type ActionsQuery = Omit<Query<"listActions">, "cursor" | "limit"> & Paging;
export type SchemaListQuery = Omit<Query<"listSchemas">, "cursor" | "limit"> & Paging;
export type AlertFiringsQuery = Omit<Query<"listAlertFirings">, "cursor" | "limit"> & Paging;
/** The list filters, and after (a saved nextCursor) or since (a time); wait: long poll at the head, 0 to 25 seconds. */
export type FeedQuery = Omit<Query<"feedEvents">, "limit" | "wait"> & { limit?: number | string; wait?: number | string };
export type FeedOptions = FeedQuery & {
  /**
   * Called after each page's events were yielded (and so handled), even a page with none:
   * save nextCursor here and a restart resumes right after them. Awaited before the next request.
   */
  onPage?: (page: FeedPosition) => void | Promise<void>;
  /** Keep polling at the head (long polls of wait seconds, default 25; with wait 0, one request a second) until the consumer breaks. */
  follow?: boolean;
};

export interface ClientOptions {
  /** The deployment, e.g. https://witness.example.com; a trailing /v1 or slash is dropped. */
  baseUrl: string;
  /** A project's API key (wtn_live_...). */
  apiKey?: string;
  /** Defaults to globalThis.fetch; tests pass a worker's own fetch. */
  fetch?: (input: string, init?: RequestInit) => Promise<Response>;
  /** Retries after the first attempt (default 4). */
  retries?: number;
  /** Backoff: the first step (default 250 ms) doubles up to maxDelayMs (default 20 s), with jitter. */
  minDelayMs?: number;
  maxDelayMs?: number;
  /** For tests: how to wait between attempts (and between the polls of a feed followed with wait 0). */
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Codes of answers that did not come from the API itself: HTTP_ERROR, an error
 * status without the API's envelope (a proxy's 502 page, a wrong address's 404);
 * BAD_RESPONSE, a success that is not the API's JSON (an HTML page: baseUrl names
 * something else); NETWORK_ERROR (status 0), no whole answer (refused, reset, cut).
 */
export type TransportErrorCode = "NETWORK_ERROR" | "HTTP_ERROR" | "BAD_RESPONSE";

/** An API error envelope (status, code, details), or one of the TransportErrorCode failures. */
export declare class WitnessError extends Error {
  constructor(status: number, code: string, message: string, details?: Record<string, unknown>);
  readonly status: number;
  readonly code: ErrorCode | TransportErrorCode;
  readonly details: Record<string, unknown>;
  /**
   * On a 403 FORBIDDEN: the scope the call needs and the key lacks
   * (`details.required_scope`); use a key that holds it. null otherwise.
   */
  readonly requiredScope: Scope | null;
}

export type OfflineCheck =
  | { ok: true; kid: string; tlog?: { ok: true; origin: string; index: number; tree_size: number; kid: string | null } }
  | { ok: false; reason: string };

export interface WitnessClient {
  events: {
    /** One Idempotency-Key per call (or yours), sent again on every retry. */
    create(event: EventInput, options?: { idempotencyKey?: string }): Promise<Event>;
    createBatch(events: EventInput[], options?: { idempotencyKey?: string }): Promise<Event[]>;
    get(id: string): Promise<Event>;
    /** Every matching event, newest first, page after page. */
    list(query?: ListQuery): AsyncIterable<Event>;
    search(q: string, query?: SearchQuery): AsyncIterable<Event>;
    verify(query?: VerifyQuery): Promise<VerifyReport>;
    /**
     * Every matching event in chain (seq) order, oldest first, whatever it was backdated to,
     * from after (a saved nextCursor), since, or the first event; page after page until an
     * answer says at_head, or with follow forever (break to stop). Each event once across
     * restarts of a collector that saves onPage's nextCursor; one that stops mid-page gets
     * the page's events again. A cursor altered or of another project is a VALIDATION_ERROR.
     */
    feed(options?: FeedOptions): AsyncIterable<Event>;
    /** One answer of the feed as it came, to page by hand (after: the previous nextCursor). */
    feedPage(query?: FeedQuery): Promise<FeedPage>;
  };
  exports: {
    /** The export as a stream of bytes (CSV or JSON). */
    download(query: ExportQuery): Promise<ReadableStream<Uint8Array>>;
  };
  receipts: {
    get(eventId: string): Promise<Receipt>;
    status(eventId: string): Promise<ReceiptStatus>;
    /**
     * Proof, log proof and `valid: true`. Pass the receipt as the JSON text you were
     * given when you have it: duplicate keys fail it, and a parsed object has lost them.
     */
    verifyOffline(receipt: string | Receipt | { data: Receipt }, keys?: string | object): Promise<OfflineCheck>;
  };
  actors: {
    erase(id: string, options?: EraseOptions): Promise<Erasure>;
    /** The erasures recorded for this id (or, by "email", this e-mail), oldest first; [] when there are none. */
    erasures(id: string, options?: ErasuresOptions): Promise<ActorErasure[]>;
  };
  /** The customers' admin portal: a one-time link for one organization's IT admin. */
  portal: {
    /** Admin. The answer's url is its only showing: hand it to the customer. Not retried (each call mints a link). */
    createLink(request: PortalLinkInput): Promise<PortalLink>;
  };
  embed: {
    createToken(request?: EmbedTokenRequest): Promise<EmbedToken>;
  };
  actions: {
    /** Every action the project has recorded, in name order (prefix: only those starting with it), page after page. */
    list(query?: ActionsQuery): AsyncIterable<ActionSummary>;
  };
  /**
   * The action catalog: per-action schemas, each change an immutable version
   * recorded in the chain (witness.schema.changed). An action is one path
   * segment, dots and all; "", "." and ".." are refused before sending
   * (VALIDATION_ERROR), since a URL cannot name them.
   */
  schemas: {
    /**
     * Adds version n+1 (admin); a document the API refuses is a VALIDATION_ERROR naming
     * each path. Not retried after a 5xx or a lost answer (each PUT makes a version):
     * compare `get(action)`'s sha256 before sending it again.
     */
    put(action: string, document: SchemaDocument): Promise<ActionSchema>;
    /** Every action with a schema, its newest version each, in action order, page after page. */
    list(query?: SchemaListQuery): AsyncIterable<ActionSchema>;
    /** The newest version, with every version; NOT_FOUND when the action has none. */
    get(action: string): Promise<SchemaDetail>;
    /** One version, from 1; NOT_FOUND when there is no such version. */
    version(action: string, version: number): Promise<ActionSchema>;
  };
  /** How ingest checks events against their action's schema. */
  catalog: {
    /** mode "off" until changed. */
    settings(): Promise<CatalogSettings>;
    /**
     * Admin. off: nothing is checked; warn: every event is stored, with schema_version
     * and schema_valid; enforce: an event that breaks its schema is refused (and, with
     * unknown_actions "reject", one whose action has none). Answers the settings now in force.
     */
    setSettings(settings: CatalogSettingsInput): Promise<CatalogSettings>;
  };
  /**
   * Alert rules: what to watch for in the project's events (or, kind integrity, in the
   * trail itself) and whom to tell. Changes need an admin key, reads a read key; each
   * change is recorded in the chain (witness.alert.*). Ids are al_ and 20 hex digits.
   */
  alerts: {
    /**
     * A webhook channel's `secret` is in this answer only. Not retried after a 5xx or a
     * lost answer (each call makes a rule): list the rules before sending it again.
     */
    create(rule: AlertRuleInput): Promise<AlertRule>;
    /** Every rule, oldest first, with each channel's state; every project has one integrity rule. */
    list(): Promise<AlertRule[]>;
    get(id: string): Promise<AlertRule>;
    /**
     * Fields given replace the rule's; channels, when given, replace all of them, their new
     * webhook secrets in this answer (after a retry, the last attempt's: the ones in force).
     */
    update(id: string, patch: AlertRulePatch): Promise<AlertRule>;
    /** The rule as it was; its undelivered notifications are dropped. After a lost answer the retry may say NOT_FOUND: it is gone. */
    delete(id: string): Promise<AlertRule>;
    /** A firing marked test: true, sent on every channel at once, with each delivery. Never retried. */
    test(id: string): Promise<AlertFiring>;
    /** When the rule fired, newest first, page after page. */
    firings(id: string, query?: AlertFiringsQuery): AsyncIterable<AlertFiring>;
  };
  /** The project's API keys; every method needs an admin key. */
  keys: {
    /**
     * Never more scopes than the calling key holds. `key` in the answer is shown
     * this once. Not retried after a 5xx or a lost answer (a key may have been
     * made): list the keys and revoke any you cannot account for.
     */
    create(request: ApiKeyRequest): Promise<ApiKeyCreated>;
    list(): Promise<ApiKey[]>;
    /** Stops working within 10 seconds; revoking one already revoked answers it unchanged. */
    revoke(prefix: string): Promise<ApiKey>;
  };
}

export declare function createClient(options: ClientOptions): WitnessClient;
export declare function retryAfterMs(value: string | null | undefined, now?: number): number | null;
export declare function backoffMs(attempt: number, options: { minDelayMs: number; maxDelayMs: number }, random?: () => number): number;
