import type { ContentfulStatusCode } from "hono/utils/http-status";

/** The closed catalogue of error codes; each has exactly one HTTP status. */
export const ERROR_STATUS = {
  VALIDATION_ERROR: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  /** The event is not in the project's transparency log yet (its tree is being built, or cannot be). */
  LOG_NOT_READY: 409,
  /** The retention plan is locked and the change would expire some events sooner (or unlock it). */
  RETENTION_LOCKED: 409,
  /** A legal hold covers events the request would destroy (an erasure). */
  LEGAL_HOLD: 409,
  /** The project's state does not allow the operation now (restoring the archive while a hot window is set, or into a filling shard). */
  CONFLICT: 409,
  EVENT_TOO_LARGE: 413,
  IDEMPOTENCY_KEY_REUSED: 422,
  /** A list or search page would read more archived segments than HISTORY_SEGMENT_READS: narrow it with a filter, or export. */
  QUERY_TOO_BROAD: 422,
  /** The event's archived copy is missing or not the bytes recorded for it: permanent until an operator restores it, so not a 5xx a client retries. */
  ARCHIVE_DAMAGED: 410,
  UNSUPPORTED_MEDIA_TYPE: 415,
  /** A job file's Range lies outside the file. */
  RANGE_NOT_SATISFIABLE: 416,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
} as const satisfies Record<string, ContentfulStatusCode>;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class ApiError extends Error {
  readonly status: ContentfulStatusCode;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "ApiError";
    this.status = ERROR_STATUS[code];
  }
}

export function errorBody(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
  return { error: { code, message, details } };
}
