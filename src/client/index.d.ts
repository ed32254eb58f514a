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
type Paging = { cursor?: string; limit?: number | string };
export type ListQuery = Omit<Query<"listEvents">, "cursor" | "limit"> & Paging;
export type SearchQuery = Omit<Query<"searchEvents">, "q" | "cursor" | "limit"> & Paging;
export type VerifyQuery = Query<"verifyEvents">;
export type ExportQuery = Query<"exportEvents">;
export type EraseOptions = Query<"eraseActor">;
export type ActionsQuery = Omit<Query<"listActions">, "cursor" | "limit"> & Paging;
export type SchemaListQuery = Omit<Query<"listSchemas">, "cursor" | "limit"> & Paging;

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
  /** For tests: how to wait between attempts. */
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
