import type { RateState } from "../lib/rate-window";
import type { EventRow } from "../db/schema";
import { eventJson, type Display } from "../model/event-shape";
import type { NewEvent } from "../model/new-event";
import { findIdempotent } from "./idempotency";
import type { PackedEvents } from "./ledger";
import type { Refusal } from "./ingest-admission";

export interface AppendRequest {
  /** The validated events, packed (packEvents): a flat array crosses RPC at about half the cost of objects. */
  events: PackedEvents;
  idempotencyKey: string | null;
  /** SHA-256 of the request body, with an Idempotency-Key: the key may only be retried with the same body. */
  requestHash: string | null;
  /** API key prefix and its per-minute budget: ingest is rate limited per key. */
  keyPrefix: string;
  rateLimit: number;
  /** The catalog revision the worker checked the events against (src/catalog/catalog-cache.ts). */
  catalogRevision: number;
  /** The request body's size in bytes: the commit queue is bounded in bytes too (src/chain/ingest-admission.ts). */
  bytes?: number;
  /** When the worker handed it to the ledger (its clock, ms): an append that waited too long to arrive is refused (src/chain/ingest-admission.ts). */
  sentAt?: number;
  /** The worker's name for this append, stored with its commit, so that a worker that lost the answer finds whether it landed (landed-appends.ts). */
  token?: string;
}

/**
 * events: each event's JSON in the API's event shape, in chain order. Text
 * rather than rows: a string crosses the RPC boundary far cheaper than an
 * object of twenty fields, and the worker only writes it into its answer.
 */
export type AppendResult =
  | { status: "appended" | "replayed"; events: string[]; rate: RateState }
  | { status: "rate_limited"; rate: RateState }
  | { status: "key_reused"; rate: RateState }
  /** Refused at the door (src/chain/ingest-admission.ts): nothing stored. */
  | { status: "overloaded"; rate: RateState; refusal: Refusal }
  | { status: "catalog_stale"; revision: number };

type Outcome = { status: "appended" | "replayed" | "key_reused"; events: string[] };

/**
 * Appends under an Idempotency-Key, for the ledger: a retry within the window
 * answers the first result and appends nothing; the same key with another
 * body is refused. Concurrent retries share one append: the attempt is
 * registered before any await.
 */
export class IdempotentAppends {
  private readonly inFlight = new Map<string, { requestHash: string | null; attempt: Promise<Outcome> }>();

  constructor(
    private readonly env: Env,
    private readonly projectId: string,
    private readonly db: () => D1Database,
    /** An append under the key committed and not yet in D1 (chain/commit-backlog.ts), looked for before D1. */
    private readonly ahead: (key: string) => Promise<{ requestHash: string | null; rows: EventRow[] }> | null,
    private readonly enqueue: (events: NewEvent[], idempotencyKey: string, requestHash: string | null, bytes: number, token: string | null) => Promise<EventRow[]>,
  ) {}

  run(events: NewEvent[], key: string, requestHash: string | null, display?: Display, bytes = 0, token: string | null = null): Promise<Outcome> {
    const running = this.inFlight.get(key);
    if (running) {
      if (!sameBody(running.requestHash, requestHash)) return Promise.resolve({ status: "key_reused", events: [] });
      return running.attempt.then((first) => (first.status === "key_reused" ? first : { status: "replayed", events: first.events }));
    }
    const attempt = (async (): Promise<Outcome> => {
      const earlier = (await this.ahead(key)) ?? (await findIdempotent(this.env, this.db(), this.projectId, key));
      if (earlier && !sameBody(earlier.requestHash, requestHash)) return { status: "key_reused", events: [] };
      if (earlier) return { status: "replayed", events: earlier.rows.map((row) => eventJson(row, display)) };
      return { status: "appended", events: (await this.enqueue(events, key, requestHash, bytes, token)).map((row) => eventJson(row, display)) };
    })();
    this.inFlight.set(key, { requestHash, attempt });
    return attempt.finally(() => this.inFlight.delete(key));
  }
}

/** Keys stored before bodies were hashed match any body, as they did then. */
function sameBody(stored: string | null, presented: string | null): boolean {
  return stored === null || stored === presented;
}
