/**
 * Checks one event against its action's schema document at ingest: the actor
 * type, the target types, the metadata against its JSON Schema, and the
 * changed fields. Built once per schema version; the issues name event paths
 * (`metadata.address.city`, `targets.1.type`) and read as sentences, one per
 * failing value, so a sender can fix the event without reading the schema.
 */
import type { OutputUnit, Schema } from "@cfworker/json-schema";
import type { Issue } from "../lib/validate";
import { metadataValidator, type SchemaDocument } from "./schema-document";

export interface CheckedEvent {
  action: string;
  actor_type: string | null;
  /** Canonical JSON text of [{type, id, name}]. */
  targets: string;
  /** Canonical JSON text of an object. */
  metadata: string;
  /** Canonical JSON text of the before/after array, or null. */
  changes: string | null;
}

const MAX_ISSUES = 20;
const MAX_LISTED = 10;

/** cfworker's errors that only say "a subschema below failed": the errors below say how. */
const WRAPPERS = new Set([
  "properties", "patternProperties", "additionalProperties", "unevaluatedProperties", "items", "prefixItems", "unevaluatedItems",
  "$ref", "allOf", "if", "dependentSchemas", "propertyNames",
]);
const CONTAINS = new Set(["contains", "minContains", "maxContains"]);
const MAP_KEYWORDS = new Set(["properties", "patternProperties", "$defs", "dependentSchemas"]);
const ARRAY_KEYWORDS = new Set(["allOf", "anyOf", "oneOf", "prefixItems"]);
const ARTICLE: Record<string, string> = { integer: "an integer", object: "an object", array: "an array", null: "null" };

const quote = (values: unknown[]) =>
  values.slice(0, MAX_LISTED).map((v) => JSON.stringify(v)).join(", ") + (values.length > MAX_LISTED ? `, … (${values.length} in all)` : "");
const plural = (n: unknown, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/**
 * Each keyword's sentence from its value in the schema, most specific first:
 * when one value fails several keywords, the first of these is its message.
 */
const MESSAGES = new Map<string, (v: unknown, error: string) => string>([
  ["type", (v) => `must be ${(Array.isArray(v) ? v : [v]).map((t: string) => ARTICLE[t] ?? `a ${t}`).join(" or ")}`],
  ["const", (v) => `must be ${JSON.stringify(v)}`],
  ["enum", (v) => ((v as unknown[]).length === 1 ? `must be ${quote(v as unknown[])}` : `must be one of ${quote(v as unknown[])}`)],
  ["minLength", (v) => `must be at least ${plural(v, "character")}`],
  ["maxLength", (v) => `must be at most ${plural(v, "character")}`],
  ["pattern", (v) => `must match pattern ${JSON.stringify(v)}`],
  ["format", (v) => `must be a valid ${v}`],
  ["minimum", (v) => `must be at least ${v}`],
  ["maximum", (v) => `must be at most ${v}`],
  ["exclusiveMinimum", (v) => `must be greater than ${v}`],
  ["exclusiveMaximum", (v) => `must be less than ${v}`],
  ["multipleOf", (v) => `must be a multiple of ${v}`],
  ["minItems", (v) => `must have at least ${plural(v, "item")}`],
  ["maxItems", (v) => `must have at most ${plural(v, "item")}`],
  ["uniqueItems", () => "must not contain the same item twice"],
  ["contains", () => "must contain at least one matching item"],
  ["minContains", (v) => `must contain at least ${plural(v, "matching item")}`],
  ["maxContains", (v) => `must contain at most ${plural(v, "matching item")}`],
  ["minProperties", (v) => `must have at least ${plural(v, "property", "properties")}`],
  ["maxProperties", (v) => `must have at most ${plural(v, "property", "properties")}`],
  ["not", () => 'must not match the schema under "not"'],
  ["oneOf", (_, error) => `must match exactly one of the schemas under "oneOf" (it matches ${/\((\d+) matches\)/.exec(error)?.[1] ?? "none"})`],
  ["anyOf", () => 'must match at least one of the schemas under "anyOf"'],
]);
const RANK = new Map([...MESSAGES.keys()].map((k, i) => [k, i]));
/** A JSON pointer token as cfworker writes it (encodeURI over ~-escaping). */
const token = (t: string) => decodeURIComponent(t).replace(/~1/g, "/").replace(/~0/g, "~");

export function eventChecker(doc: SchemaDocument): (event: CheckedEvent) => Issue[] {
  const metadata = doc.metadata === null ? null : metadataValidator(doc.metadata);
  const actorTypes = doc.actor_types;
  const targetTypes = doc.targets.map((t) => t.type);
  const requiredTypes = doc.targets.filter((t) => t.required).map((t) => t.type);
  const fields = doc.changes?.fields ?? null;

  /** The schema value at an error's keywordLocation; a $ref step jumps to its target, as cfworker did. */
  const valueAt = (location: string): unknown => {
    let node: unknown = metadata?.root;
    let inSchema = true;
    for (const t of location.split("/").slice(1).map(token)) {
      if (typeof node !== "object" || node === null) return undefined;
      if (inSchema && t === "$ref") node = metadata?.lookup[(node as Schema).__absolute_ref__ ?? ""];
      else {
        node = (node as Record<string, unknown>)[t];
        inSchema = !inSchema || !(MAP_KEYWORDS.has(t) || ARRAY_KEYWORDS.has(t));
      }
    }
    return node;
  };

  const metadataIssues = (errors: OutputUnit[]): Issue[] => {
    // anyOf/oneOf/contains list every branch's or item's failure; those contradict each other, so only the summary is said.
    const hidden: string[] = [];
    const names: string[] = [];
    for (const e of errors) {
      if (e.keyword === "anyOf" || e.keyword === "oneOf") hidden.push(`${e.keywordLocation}/`);
      else if (CONTAINS.has(e.keyword)) hidden.push(`${e.keywordLocation.replace(/\/(min|max)Contains$/, "/contains")}/`);
      else if (e.keyword === "propertyNames") names.push(`${e.keywordLocation}/`);
    }
    const best = new Map<string, { rank: number; message: string }>();
    errors.forEach((e, i) => {
      if (WRAPPERS.has(e.keyword) || hidden.some((h) => e.keywordLocation.startsWith(h))) return;
      let path = ["metadata", ...e.instanceLocation.split("/").slice(1).map(token)].join(".");
      let message: string;
      let rank = RANK.get(e.keyword) ?? RANK.size;
      if (e.keyword === "false") {
        // A false schema's error follows the error of the keyword that holds it.
        const holder = errors[i - 1]?.keyword;
        message = ["additionalProperties", "unevaluatedProperties", "unevaluatedItems", "items"].includes(holder) ? `is not allowed (${holder} is false)` : "is not allowed";
        rank = -1;
      } else if (e.keyword === "required") {
        // The missing property is the path: it is what the sender has to add.
        path += `.${/^Instance does not have required property "(.*)"\.$/s.exec(e.error)?.[1]}`;
        message = "is required";
      } else if (e.keyword === "dependentRequired") {
        const [, present, missing] = /^Instance has "(.*)" but does not have "(.*)"\.$/s.exec(e.error) ?? [];
        path += `.${missing}`;
        message = `is required when ${JSON.stringify(present)} is present`;
      } else {
        const value = valueAt(e.keywordLocation);
        const say = MESSAGES.get(e.keyword);
        message = say && value !== undefined ? say(value, e.error) : e.error;
      }
      if (names.some((n) => e.keywordLocation.startsWith(n))) message = `property name ${message}`;
      const have = best.get(path);
      if (!have || rank < have.rank) best.set(path, { rank, message });
    });
    return [...best].map(([path, { message }]) => ({ path, message }));
  };

  return (event) => {
    const issues: Issue[] = [];
    if (actorTypes !== null && (event.actor_type === null || !actorTypes.includes(event.actor_type))) {
      issues.push({ path: "actor.type", message: `must be one of ${quote(actorTypes)}` });
    }
    if (targetTypes.length > 0) {
      const targets = JSON.parse(event.targets) as Array<{ type: string }>;
      targets.forEach((t, i) => {
        if (!targetTypes.includes(t.type)) {
          issues.push({ path: `targets.${i}.type`, message: `${JSON.stringify(t.type)} is not a target type of this action (one of ${quote(targetTypes)})` });
        }
      });
      for (const type of requiredTypes) {
        if (!targets.some((t) => t.type === type)) issues.push({ path: "targets", message: `must include a target of type ${JSON.stringify(type)}` });
      }
    }
    if (metadata) {
      const result = metadata.validator.validate(JSON.parse(event.metadata));
      if (!result.valid) issues.push(...metadataIssues(result.errors));
    }
    if (fields !== null && event.changes !== null) {
      (JSON.parse(event.changes) as Array<{ field: string }>).forEach((c, i) => {
        if (!fields.includes(c.field)) issues.push({ path: `changes.${i}.field`, message: `${JSON.stringify(c.field)} is not a declared field (one of ${quote(fields)})` });
      });
    }
    return issues.slice(0, MAX_ISSUES);
  };
}
