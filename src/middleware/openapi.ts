import { OpenAPIHono, type Hook, type RouteConfig } from "@hono/zod-openapi";
import type { ZodType } from "zod";
import { errorResponseSchema } from "../schemas/responses";
import type { AppEnv } from "./app-env";
import { ERROR_STATUS, type ErrorCode } from "../lib/errors";
import { toIssues, validationError } from "../lib/validate";

/**
 * Any validation done by @hono/zod-openapi's own validators ends as ours:
 * 400 VALIDATION_ERROR with details.issues, through validationError.
 */
export const defaultHook: Hook<unknown, AppEnv, string, void> = (result) => {
  if (!result.success) throw validationError(toIssues(result.error));
};

/** A router whose routes land in the OpenAPI document. */
export function router() {
  return new OpenAPIHono<AppEnv>({ defaultHook });
}

/**
 * Documents a route next to its (unchanged) Hono handler. Handlers read their
 * bodies themselves (byte cap, 413 before 400) and write JSON text directly, so
 * they are registered with the usual methods and the definition with this;
 * query and path validation use the same zod schemas through validate().
 */
export function documented(app: OpenAPIHono<AppEnv>, route: RouteConfig): void {
  app.openAPIRegistry.registerPath(route);
}

const RATE_HEADERS = {
  "RateLimit-Limit": { $ref: "#/components/headers/RateLimit-Limit" },
  "RateLimit-Remaining": { $ref: "#/components/headers/RateLimit-Remaining" },
  "RateLimit-Reset": { $ref: "#/components/headers/RateLimit-Reset" },
};

export function json(schema: ZodType, description: string, extra: Record<string, unknown> = {}) {
  return { description, headers: RATE_HEADERS, content: { "application/json": { schema } }, ...extra };
}

const ERROR_TEXT: Record<ErrorCode, string> = {
  VALIDATION_ERROR: "VALIDATION_ERROR: a parameter or the body is invalid (details.issues)",
  UNAUTHORIZED: "UNAUTHORIZED: no credential, or not a valid one",
  FORBIDDEN: "FORBIDDEN: the credential may not call this: the API key lacks the scope details.required_scope names, or an embed token called more than a read",
  NOT_FOUND: "NOT_FOUND",
  LOG_NOT_READY: "LOG_NOT_READY: the event is not in the transparency log yet",
  RETENTION_LOCKED: "RETENTION_LOCKED: the plan is locked and this change would expire events sooner, drop a locked rule, or unlock it (details.removed, details.shortened)",
  LEGAL_HOLD: "LEGAL_HOLD: a legal hold covers events this would destroy (details.holds names the holds)",
  CONFLICT: "CONFLICT: the project's state does not allow this now (the message says why); nothing changed",
  EVENT_TOO_LARGE: "EVENT_TOO_LARGE: a field or the body is over its cap",
  IDEMPOTENCY_KEY_REUSED: "IDEMPOTENCY_KEY_REUSED: the key was used with a different body",
  ARCHIVE_DAMAGED: "ARCHIVE_DAMAGED: the event's archived copy is missing or damaged; retrying does not help",
  QUERY_TOO_BROAD: "QUERY_TOO_BROAD: this page would read more archived segments than one request may (events stored far out of time order); narrow it with a filter, or use an export job",
  UNSUPPORTED_MEDIA_TYPE: "UNSUPPORTED_MEDIA_TYPE: the body must be application/json",
  RANGE_NOT_SATISFIABLE: "RANGE_NOT_SATISFIABLE: the Range lies outside the file (Content-Range: bytes */<size>)",
  RATE_LIMITED: "RATE_LIMITED: over the per-minute budget; retry after Retry-After seconds",
  INTERNAL_ERROR: "INTERNAL_ERROR: nothing was stored; safe to retry",
};

/** Error responses, one per code (each code has one status); 429 and 500 are on every route. */
export function errors(...codes: ErrorCode[]) {
  const out: Record<number, ReturnType<typeof json>> = {};
  for (const code of new Set<ErrorCode>([...codes, "RATE_LIMITED", "INTERNAL_ERROR"])) {
    const extra =
      code === "RATE_LIMITED"
        ? { headers: { ...RATE_HEADERS, "Retry-After": { $ref: "#/components/headers/Retry-After" } } }
        : {};
    out[ERROR_STATUS[code]] = json(errorResponseSchema, ERROR_TEXT[code], extra);
  }
  return out;
}

/** The errors of every authenticated /v1 route. */
export const AUTH_ERRORS = ["UNAUTHORIZED", "FORBIDDEN"] as const satisfies ErrorCode[];

/** Components that no route names by itself: auth schemes and the rate-limit headers. */
export function registerComponents(app: OpenAPIHono<AppEnv>): void {
  const r = app.openAPIRegistry;
  r.registerComponent("securitySchemes", "ApiKey", {
    type: "http",
    scheme: "bearer",
    bearerFormat: "wtn_live_<prefix>_<secret>",
    description:
      "A project's API key (npm run keys:create, POST /v1/keys), as Authorization: Bearer <key>. Each operation names the scope it needs " +
      "as this requirement's role: ingest (send events), read (every read), admin (retention, erasure, streams, legal holds, keys; implies the others).",
  });
  r.registerComponent("securitySchemes", "EmbedToken", {
    type: "http",
    scheme: "bearer",
    bearerFormat: "embed token",
    description: "A short-lived read-only token from POST /v1/embed/token: list, search and get one event only.",
  });
  const header = (description: string) => ({ description, schema: { type: "integer" as const, minimum: 0 } });
  r.registerComponent("headers", "RateLimit-Limit", header("Requests (cost units) allowed per minute"));
  r.registerComponent("headers", "RateLimit-Remaining", header("Units left in the current window"));
  r.registerComponent("headers", "RateLimit-Reset", header("Seconds until the window resets"));
  r.registerComponent("headers", "Retry-After", header("Seconds to wait before retrying (on 429)"));
}
