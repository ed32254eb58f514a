/** An event as the ledger receives it: validated, flattened, JSON fields canonical. */
export interface NewEvent {
  action: string;
  organization: string | null;
  actor_id: string | null;
  actor_type: string | null;
  actor_name: string | null;
  actor_email: string | null;
  targets: string;
  metadata: string;
  occurred_at: string | null;
  ip_address: string | null;
  user_agent: string | null;
  /** Canonical JSON text of the before/after array; absent or null when none was sent. */
  changes?: string | null;
  /** The catalog schema version the event was checked against, and whether it passed (src/catalog/). */
  schema_version?: number | null;
  schema_valid?: boolean | null;
}

/**
 * How far ahead of the service's clock an occurred_at may be (client clock
 * skew): the ingest schema refuses one further ahead (schemas/event.ts), so
 * a period's rows lie below its end plus this (model/periods.ts, armSpans'
 * ceiling).
 */
export const MAX_FUTURE_SKEW_MS = 5 * 60_000;
