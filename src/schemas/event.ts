import { z } from "zod";
import { canonicalize } from "../sealing/canonical";
import { SELF_AUDIT_PREFIX } from "../model/erasable";
import { MAX_FUTURE_SKEW_MS, type NewEvent } from "../model/new-event";
import { normalizeTimestamp } from "../model/cursor";
import { ApiError } from "../lib/errors";
import { utf8Length } from "../lib/crypto";
import { hasLoneSurrogate, loneSurrogatePath } from "../lib/well-formed";
import { toIssues, validationError } from "../lib/validate";

/** Per-event caps in UTF-8 bytes of the serialized field (spec "Limits"). */
export const CAPS = {
  action: 255,
  organization: 128,
  metadata: 8192,
  targets: 4096,
  targetEntries: 20,
  changes: 8192,
  changeEntries: 50,
  "actor.id": 255,
  "actor.name": 255,
  "actor.email": 255,
  "actor.type": 64,
  "target.type": 64,
  "target.id": 255,
  "target.name": 255,
} as const;

function isFarFuture(text: string): boolean {
  const normalized = normalizeTimestamp(text);
  return normalized !== null && Date.parse(normalized) > Date.now() + MAX_FUTURE_SKEW_MS;
}

const required = (field: string) => ({
  error: (issue: { input: unknown }) =>
    issue.input === undefined ? `${field} is required` : `${field} must be a string`,
});

export const actorSchema = z.strictObject({
  id: z.string().min(1, "actor.id must not be empty").nullish(),
  type: z.string().min(1, "actor.type must not be empty").nullish(),
  name: z.string().nullish(),
  // A plain local@domain.tld check: zod's full e-mail pattern cost more than the rest of an event's validation.
  email: z
    .string()
    .regex(/^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/, "actor.email must be a valid e-mail address")
    .nullish(),
});

export const targetSchema = z.strictObject({
  type: z.string(required("type")).min(1, "type must not be empty"),
  id: z.string(required("id")).min(1, "id must not be empty"),
  name: z.string().nullish(),
});

/** One before/after pair (issue 35); an absent side means the field had no value then (created, or removed). */
export const changeSchema = z.strictObject({
  field: z.string(required("field")).min(1, "field must not be empty").max(255, "field must be at most 255 characters"),
  before: z.unknown().optional(),
  after: z.unknown().optional(),
});

export const eventInputSchema = z.strictObject({
  action: z.string(required("action")).min(1, "action must not be empty"),
  organization: z.string().min(1, "organization must not be empty").nullish(),
  actor: actorSchema.nullish(),
  targets: z.array(targetSchema).nullish(),
  // The body came from JSON.parse, so its values are JSON already; only the object shape needs checking.
  metadata: z.record(z.string(), z.unknown(), "metadata must be a JSON object").nullish(),
  changes: z
    .array(changeSchema, "changes must be an array of objects with a string field")
    .nullish()
    .refine((v) => v == null || new Set(v.map((c) => c.field)).size === v.length, { message: "changes must name each field at most once" })
    .meta({ description: "Before/after values of what the action changed; inside the hash. At most 50 entries and 8192 bytes" }),
  version: z
    .number("version must be a whole number")
    .int("version must be a whole number")
    .min(1, "version must be at least 1")
    .nullish()
    .meta({ description: "Check against this version of the action's catalog schema instead of the newest (catalog mode warn or enforce)" }),
  occurred_at: z
    .string()
    .nullish()
    .refine((v) => v == null || normalizeTimestamp(v) !== null, {
      message: "occurred_at must be an ISO 8601 timestamp with a zone, like 2026-05-05T05:05:05.000Z",
    })
    // A far-future event would sit at the top of every list forever; clocks may run a little ahead.
    .refine((v) => v == null || !isFarFuture(v), {
      message: `occurred_at must not be more than ${MAX_FUTURE_SKEW_MS / 60_000} minutes in the future`,
    }),
});

export type EventInput = z.infer<typeof eventInputSchema>;

function tooLarge(field: string, size: number, limit: number, unit: "bytes" | "entries" = "bytes", at = "") {
  const name = at + field;
  const index = /^events\.(\d+)\.$/.exec(at);
  return new ApiError("EVENT_TOO_LARGE", `${name} is ${size} ${unit}; the limit is ${limit} ${unit}`, {
    field: name,
    size,
    limit,
    ...(unit === "entries" ? { unit } : {}),
    ...(index ? { index: Number(index[1]) } : {}),
  });
}

/** Checks every cap on the raw body, before shape validation, so oversize is always a 413. */
export function checkCaps(raw: Record<string, unknown>, at = ""): void {
  const text = (field: keyof typeof CAPS, value: unknown) => {
    if (typeof value === "string" && utf8Length(value) > CAPS[field]) {
      throw tooLarge(field, utf8Length(value), CAPS[field], "bytes", at);
    }
  };
  text("action", raw.action);
  text("organization", raw.organization);
  const actor = raw.actor;
  if (actor && typeof actor === "object") {
    const a = actor as Record<string, unknown>;
    text("actor.id", a.id);
    text("actor.type", a.type);
    text("actor.name", a.name);
    text("actor.email", a.email);
  }
  if (Array.isArray(raw.targets)) {
    if (raw.targets.length > CAPS.targetEntries) {
      throw tooLarge("targets", raw.targets.length, CAPS.targetEntries, "entries", at);
    }
    const size = utf8Length(JSON.stringify(raw.targets));
    if (size > CAPS.targets) throw tooLarge("targets", size, CAPS.targets, "bytes", at);
    raw.targets.forEach((t, i) => {
      if (!t || typeof t !== "object") return;
      const entry = t as Record<string, unknown>;
      for (const key of ["type", "id", "name"] as const) {
        const value = entry[key];
        const cap = CAPS[`target.${key}`];
        if (typeof value === "string" && utf8Length(value) > cap) {
          throw tooLarge(`targets.${i}.${key}`, utf8Length(value), cap, "bytes", at);
        }
      }
    });
  }
  if (raw.metadata !== undefined && raw.metadata !== null) {
    const size = utf8Length(JSON.stringify(raw.metadata));
    if (size > CAPS.metadata) throw tooLarge("metadata", size, CAPS.metadata, "bytes", at);
  }
  if (Array.isArray(raw.changes)) {
    if (raw.changes.length > CAPS.changeEntries) throw tooLarge("changes", raw.changes.length, CAPS.changeEntries, "entries", at);
    const size = utf8Length(JSON.stringify(raw.changes));
    if (size > CAPS.changes) throw tooLarge("changes", size, CAPS.changes, "bytes", at);
  }
}

/** The first field holding an unpaired surrogate: one rule for every string an event carries. */
function loneSurrogateField(e: EventInput, metadata: string, targets: string, changes: string | null): string | null {
  const texts: Array<[string, string | null | undefined]> = [
    ["action", e.action],
    ["organization", e.organization],
    ["actor.id", e.actor?.id],
    ["actor.type", e.actor?.type],
    ["actor.name", e.actor?.name],
    ["actor.email", e.actor?.email],
  ];
  for (const [field, text] of texts) if (text && hasLoneSurrogate(text)) return field;
  return (
    loneSurrogatePath(e.targets, targets, "targets") ??
    loneSurrogatePath(e.metadata, metadata, "metadata") ??
    (changes === null ? null : loneSurrogatePath(e.changes, changes, "changes"))
  );
}

export interface RequestContext {
  ip_address: string | null;
  user_agent: string | null;
}

/** Raw JSON value -> NewEvent, or throws the 413 / 400 the spec asks for. */
export function parseEvent(raw: unknown, ctx: RequestContext, at = ""): NewEvent {
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) {
    throw validationError([{ path: at.replace(/\.$/, ""), message: "an event must be a JSON object" }]);
  }
  checkCaps(raw as Record<string, unknown>, at);
  const result = eventInputSchema.safeParse(raw);
  if (!result.success) {
    throw validationError(toIssues(result.error).map((i) => ({ ...i, path: at + i.path })));
  }
  const e = result.data;
  let metadata: string;
  let targets: string;
  let changes: string | null = null;
  try {
    metadata = canonicalize(e.metadata ?? {});
    targets = canonicalize((e.targets ?? []).map((t) => ({ type: t.type, id: t.id, name: t.name ?? null })));
    // No entries is no changes: the same payload as an event that sent none.
    if (e.changes && e.changes.length > 0) changes = canonicalize(e.changes);
  } catch {
    throw validationError([{ path: `${at}metadata`, message: "metadata must hold finite JSON values" }]);
  }
  if (e.action.startsWith(SELF_AUDIT_PREFIX)) {
    throw validationError([{ path: `${at}action`, message: `actions starting with "${SELF_AUDIT_PREFIX}" are Witness's own records of admin actions; use another name` }]);
  }
  const unpaired = loneSurrogateField(e, metadata, targets, changes);
  if (unpaired) {
    throw validationError([
      { path: at + unpaired, message: "must not hold an unpaired UTF-16 surrogate (text cut in the middle of a character, like an emoji's first half)" },
    ]);
  }
  return {
    action: e.action,
    organization: e.organization ?? null,
    actor_id: e.actor?.id ?? null,
    actor_type: e.actor?.type ?? null,
    actor_name: e.actor?.name ?? null,
    actor_email: e.actor?.email ?? null,
    targets,
    metadata,
    occurred_at: e.occurred_at ? normalizeTimestamp(e.occurred_at) : null,
    ip_address: ctx.ip_address,
    user_agent: ctx.user_agent,
    changes,
    // The version asked for; the catalog check (src/catalog/catalog-cache.ts) keeps it only when it checks the event.
    schema_version: e.version ?? null,
    schema_valid: null,
  };
}
