/**
 * src/catalog/: the action catalog: what an action's events carry (schema-document.ts), how they are checked at ingest (event-check.ts), the display sentence (display-template.ts), where schemas live (catalog-store.ts, in the ledger) and the worker's copy (catalog-cache.ts). Start here.
 *
 * This file: the document an admin PUTs to /v1/schemas/{action}, parsed into
 * its normalized form, and the check of its metadata JSON Schema. The schema
 * runs at ingest on every event, so it is held to the subset cfworker runs
 * correctly, must stay inside itself ($ref) and must not loop: whatever this
 * accepts, event-check.ts can run without throwing.
 */
import { dereference, Validator, type Schema } from "@cfworker/json-schema";
import { utf8Length } from "../lib/crypto";
import type { Issue } from "../lib/validate";
import { OCSF_CLASSES, type OcsfClass } from "../model/ocsf";
import { checkTemplate } from "./display-template";

export const MAX_SCHEMA_BYTES = 16384;

export interface SchemaDocument {
  description: string | null;
  /** A JSON Schema (checkJsonSchema). Its values typed `{} | null` rather than unknown, so the document crosses Durable Object RPC. */
  metadata: JsonSchema | null;
  targets: Array<{ type: string; required: boolean }>;
  actor_types: string[] | null;
  changes: { fields: string[] } | null;
  filterable: string[];
  display: string | null;
  /** The OCSF class (and activity) `format=ocsf` writes the action's events as; null: API Activity, the activity derived from the action. */
  ocsf: OcsfClass | null;
}

export type JsonSchema = boolean | { [keyword: string]: {} | null };

export type ParsedSchemaDocument = { ok: true; document: SchemaDocument } | { ok: false; issues: Issue[]; tooLarge?: { size: number; limit: number } };

const FIELDS = new Set(["description", "metadata", "targets", "actor_types", "changes", "filterable", "display", "ocsf"]);
const FILTER_KEY = /^[A-Za-z0-9_-]{1,64}$/;
const SCALAR_TYPES = new Set(["string", "number", "integer", "boolean"]);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Strings of 1..max characters, unique, at most `most` of them; issues at `path.i`. */
function stringList(value: unknown, path: string, max: number, least: number, most: number, issues: Issue[]): string[] {
  if (!Array.isArray(value)) return void issues.push({ path, message: "must be an array of strings" }), [];
  if (value.length < least || value.length > most) issues.push({ path, message: `must have ${least} to ${most} entries` });
  const seen = new Set<string>();
  value.forEach((v, i) => {
    if (typeof v !== "string" || v.length < 1 || v.length > max) issues.push({ path: `${path}.${i}`, message: `must be a string of 1 to ${max} characters` });
    else if (seen.has(v)) issues.push({ path: `${path}.${i}`, message: `${JSON.stringify(v)} is listed twice` });
    else seen.add(v);
  });
  return value as string[];
}

/** A property schema a list can filter on: a scalar type, or an enum/const of scalars. */
function filterableProperty(s: unknown): boolean {
  if (!isObject(s)) return false;
  const scalar = (v: unknown) => ["string", "number", "boolean"].includes(typeof v);
  if (typeof s.type === "string") return SCALAR_TYPES.has(s.type);
  if (Array.isArray(s.type)) return s.type.some((t) => SCALAR_TYPES.has(t)) && s.type.every((t) => SCALAR_TYPES.has(t) || t === "null");
  if (Array.isArray(s.enum)) return s.enum.length > 0 && s.enum.every(scalar);
  return "const" in s && scalar(s.const);
}

/** An absent field and an explicit null are the same, so a document read back from GET can be PUT again as it is. */
export function parseSchemaDocument(raw: unknown): ParsedSchemaDocument {
  const size = utf8Length(JSON.stringify(raw) ?? "");
  if (size > MAX_SCHEMA_BYTES) {
    return { ok: false, issues: [{ path: "", message: `is ${size} bytes; at most ${MAX_SCHEMA_BYTES}` }], tooLarge: { size, limit: MAX_SCHEMA_BYTES } };
  }
  if (!isObject(raw)) return { ok: false, issues: [{ path: "", message: "must be a JSON object" }] };
  const issues: Issue[] = [];
  for (const key of Object.keys(raw)) if (!FIELDS.has(key)) issues.push({ path: key, message: "unknown field" });
  const has = (key: string) => raw[key] !== undefined && raw[key] !== null;
  const doc: SchemaDocument = { description: null, metadata: null, targets: [], actor_types: null, changes: null, filterable: [], display: null, ocsf: null };

  if (has("description")) {
    if (typeof raw.description !== "string" || raw.description.length > 1000) issues.push({ path: "description", message: "must be a string of at most 1000 characters" });
    else doc.description = raw.description;
  }
  if (has("metadata")) {
    issues.push(...checkJsonSchema(raw.metadata));
    doc.metadata = raw.metadata as JsonSchema;
  }
  if (has("targets")) {
    if (!Array.isArray(raw.targets)) issues.push({ path: "targets", message: "must be an array of {type, required}" });
    else {
      if (raw.targets.length > 20) issues.push({ path: "targets", message: "must have at most 20 entries" });
      const seen = new Set<string>();
      raw.targets.forEach((t, i) => {
        const at = `targets.${i}`;
        if (!isObject(t)) return void issues.push({ path: at, message: "must be an object {type, required}" });
        for (const key of Object.keys(t)) if (key !== "type" && key !== "required") issues.push({ path: `${at}.${key}`, message: "unknown field" });
        if (typeof t.type !== "string" || t.type.length < 1 || t.type.length > 64) issues.push({ path: `${at}.type`, message: "must be a string of 1 to 64 characters" });
        else if (seen.has(t.type)) issues.push({ path: `${at}.type`, message: `${JSON.stringify(t.type)} is listed twice` });
        else seen.add(t.type);
        if (t.required !== undefined && typeof t.required !== "boolean") issues.push({ path: `${at}.required`, message: "must be true or false" });
        doc.targets.push({ type: t.type as string, required: t.required === true });
      });
    }
  }
  // An empty list would refuse every event; leaving the field out is how to allow any actor.
  if (has("actor_types")) doc.actor_types = stringList(raw.actor_types, "actor_types", 64, 1, 20, issues);
  if (has("changes")) {
    const c = raw.changes;
    if (!isObject(c)) issues.push({ path: "changes", message: "must be an object {fields}" });
    else {
      for (const key of Object.keys(c)) if (key !== "fields") issues.push({ path: `changes.${key}`, message: "unknown field" });
      doc.changes = { fields: stringList(c.fields, "changes.fields", 255, 1, 50, issues) };
    }
  }
  if (has("filterable")) {
    doc.filterable = stringList(raw.filterable, "filterable", 64, 0, 8, issues);
    const properties = isObject(raw.metadata) && isObject(raw.metadata.properties) ? raw.metadata.properties : {};
    doc.filterable.forEach((key, i) => {
      if (typeof key !== "string") return;
      if (!FILTER_KEY.test(key)) issues.push({ path: `filterable.${i}`, message: "must be 1 to 64 characters of A-Z a-z 0-9 _ -" });
      else if (!Object.hasOwn(properties, key)) issues.push({ path: `filterable.${i}`, message: `${JSON.stringify(key)} is not in metadata.properties` });
      else if (!filterableProperty(properties[key])) {
        issues.push({ path: `filterable.${i}`, message: `metadata.properties.${key} must have type string, number, integer or boolean (or an enum or const of such values)` });
      }
    });
  }
  if (has("display")) {
    if (typeof raw.display !== "string") issues.push({ path: "display", message: "must be a string" });
    else {
      issues.push(...checkTemplate(raw.display));
      doc.display = raw.display;
    }
  }
  if (has("ocsf")) doc.ocsf = ocsfClass(raw.ocsf, issues);
  return issues.length > 0 ? { ok: false, issues } : { ok: true, document: doc };
}

/** Only the classes src/model/ocsf.ts maps: any other would export events that class's required attributes are missing from. */
function ocsfClass(value: unknown, issues: Issue[]): OcsfClass | null {
  if (!isObject(value)) return void issues.push({ path: "ocsf", message: "must be an object {class_uid, activity_id}" }), null;
  for (const key of Object.keys(value)) if (key !== "class_uid" && key !== "activity_id") issues.push({ path: `ocsf.${key}`, message: "unknown field" });
  const uid = value.class_uid;
  if (typeof uid !== "number" || !Object.hasOwn(OCSF_CLASSES, uid)) {
    const supported = Object.entries(OCSF_CLASSES).map(([id, c]) => `${id} (${c.caption})`).join(", ");
    return void issues.push({ path: "ocsf.class_uid", message: `must be one of the supported OCSF classes: ${supported}` }), null;
  }
  const cls = OCSF_CLASSES[uid];
  const activity = value.activity_id ?? null;
  if (activity !== null && !(typeof activity === "number" && Object.hasOwn(cls.activities, activity))) {
    const activities = Object.entries(cls.activities).map(([id, caption]) => `${id} (${caption})`).join(", ");
    issues.push({ path: "ocsf.activity_id", message: `must be an activity of class ${uid} (${cls.caption}): ${activities}; or null to derive it from the action` });
  }
  return { class_uid: uid, activity_id: activity as number | null };
}

/** Keywords holding one subschema, an array of them, or an object of them. */
const SCHEMA = new Set(["additionalProperties", "propertyNames", "items", "contains", "not", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema"]);
const SCHEMAS = new Set(["allOf", "anyOf", "oneOf", "prefixItems"]);
const MAPS = new Set(["properties", "patternProperties", "$defs", "dependentSchemas"]);
/** Keywords whose subschemas apply to the same value: a cycle through only these (and $ref) never ends. */
const SAME_VALUE = new Set(["allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas"]);
const TYPES = new Set(["null", "boolean", "object", "array", "number", "integer", "string"]);
const DRAFT = "https://json-schema.org/draft/2020-12/schema";
const ANCHOR = /^[A-Za-z_][-A-Za-z0-9._]*$/;
// Lowercase names only: cfworker looks formats up on a plain object, so "__proto__" would make it call a non-function.
const FORMAT = /^[a-z][a-z0-9-]*$/;
const MAX_DEPTH = 32;
/** Subschemas one value may be checked against (through $ref and allOf/anyOf/oneOf...): a DAG of refs can otherwise grow exponentially. */
const MAX_EXPANSION = 1000;

const escapeToken = (key: string) => key.replace(/~/g, "~0").replace(/\//g, "~1");
const uniqueStrings = (v: unknown) => Array.isArray(v) && v.every((s) => typeof s === "string") && new Set(v).size === v.length;
const compiles = (pattern: string) => {
  try {
    return new RegExp(pattern, "u"), true;
  } catch {
    return false;
  }
};

const number = (v: unknown) => (typeof v === "number" ? null : "must be a number");
const count = (v: unknown) => (Number.isSafeInteger(v) && (v as number) >= 0 ? null : "must be a non-negative integer");
const boolean = (v: unknown) => (typeof v === "boolean" ? null : "must be true or false");
const string = (v: unknown) => (typeof v === "string" ? null : "must be a string");
const names = (v: unknown) => (uniqueStrings(v) ? null : "must be an array of distinct strings");
const anything = () => null;
/** Every other keyword supported, with the check of its value ($anchor and $ref are checked in place: they name schemas). */
const VALUES = new Map<string, (v: unknown) => string | null>([
  ["$schema", (v) => (v === DRAFT ? null : `must be "${DRAFT}" (the only draft supported)`)],
  ["type", (v) => ((typeof v === "string" ? TYPES.has(v) : uniqueStrings(v) && (v as string[]).length > 0 && (v as string[]).every((t) => TYPES.has(t))) ? null
    : "must be one of null, boolean, object, array, number, integer, string, or a non-empty array of them without repeats")],
  ["enum", (v) => (Array.isArray(v) && v.length > 0 ? null : "must be a non-empty array")],
  ["multipleOf", (v) => (typeof v === "number" && v > 0 ? null : "must be a number greater than 0")],
  ["pattern", (v) => (typeof v === "string" && compiles(v) ? null : "must be a valid regular expression")],
  ["required", names],
  ["dependentRequired", (v) => (isObject(v) && Object.values(v).every(uniqueStrings) ? null : "must be an object of arrays of distinct strings")],
  ["format", (v) => (typeof v === "string" && FORMAT.test(v) ? null : 'must be a format name such as "date-time" or "email"')],
  ["examples", (v) => (Array.isArray(v) ? null : "must be an array")],
  ...["maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"].map((k) => [k, number] as const),
  ...["maxLength", "minLength", "maxItems", "minItems", "maxContains", "minContains", "maxProperties", "minProperties"].map((k) => [k, count] as const),
  ...["uniqueItems", "deprecated", "readOnly", "writeOnly"].map((k) => [k, boolean] as const),
  ...["$comment", "title", "description", "contentEncoding", "contentMediaType"].map((k) => [k, string] as const),
  ...["const", "default"].map((k) => [k, anything] as const),
]);

interface Edge {
  to: string;
  /** The path of the $ref this edge follows; null for a subschema written in place. */
  ref: string | null;
}

/**
 * Issues of a metadata JSON Schema (2020-12, the subset above), paths from `at`.
 * Expects a document already capped at MAX_SCHEMA_BYTES.
 */
export function checkJsonSchema(schema: unknown, at = "metadata"): Issue[] {
  const issues: Issue[] = [];
  const root = structuredClone(schema);
  // Nodes are the JSON pointers of schema positions, so a $ref resolves by string.
  const paths = new Map<string, string>();
  const edges = new Map<string, Edge[]>();
  const anchors = new Map<string, string>();
  const refs: Array<{ from: string; ref: string; path: string; holder: Schema }> = [];
  const fail = (path: string, message: string) => void issues.push({ path, message });

  const walk = (node: unknown, path: string, pointer: string, depth: number): void => {
    if (depth > MAX_DEPTH) return fail(path, `nests deeper than ${MAX_DEPTH} levels`);
    if (typeof node === "boolean") return void paths.set(pointer, path);
    if (!isObject(node)) return fail(path, "must be a JSON Schema: an object or true/false");
    paths.set(pointer, path);
    const out: Edge[] = [];
    edges.set(pointer, out);
    const sub = (child: unknown, keys: string[], same: boolean) => {
      const p = pointer + keys.map((k) => `/${escapeToken(k)}`).join("");
      if (same) out.push({ to: p, ref: null });
      walk(child, `${path}.${keys.join(".")}`, p, depth + 1);
    };
    for (const [key, value] of Object.entries(node)) {
      const here = `${path}.${key}`;
      const check = VALUES.get(key);
      if (SCHEMA.has(key)) sub(value, [key], SAME_VALUE.has(key));
      else if (SCHEMAS.has(key)) {
        if (!Array.isArray(value) || value.length === 0) fail(here, "must be a non-empty array of schemas");
        else value.forEach((s, i) => sub(s, [key, String(i)], SAME_VALUE.has(key)));
      } else if (MAPS.has(key)) {
        if (!isObject(value)) fail(here, "must be an object of schemas");
        else
          for (const [k, s] of Object.entries(value)) {
            if (key === "patternProperties" && !compiles(k)) fail(`${here}.${k}`, "is not a valid regular expression");
            sub(s, [key, k], key === "dependentSchemas");
          }
      } else if (key === "$anchor") {
        if (typeof value !== "string" || !ANCHOR.test(value)) fail(here, "must be a name of letters, digits, - _ . starting with a letter or _");
        else if (anchors.has(value)) fail(here, `anchor ${JSON.stringify(value)} is defined twice`);
        else anchors.set(value, pointer);
      } else if (key === "$ref") {
        if (typeof value !== "string") fail(here, "must be a string");
        else refs.push({ from: pointer, ref: value, path: here, holder: node as Schema });
      } else if (check) {
        const problem = check(value);
        if (problem) fail(here, problem);
      } else fail(here, key === "definitions" ? "unsupported keyword (draft 2020-12 uses $defs)" : "unsupported keyword");
    }
  };

  walk(root, at, "", 0);
  for (const r of refs) {
    let target: string | undefined;
    if (r.ref === "#" || r.ref.startsWith("#/")) {
      try {
        target = decodeURIComponent(r.ref.slice(1));
      } catch {
        target = undefined;
      }
    } else if (r.ref.startsWith("#")) target = anchors.get(r.ref.slice(1));
    if (target === undefined || !paths.has(target)) fail(r.path, "$ref must point inside this schema");
    else edges.get(r.from)?.push({ to: target, ref: r.path });
  }
  if (issues.length > 0) return issues;

  // Cycles through same-value edges: a DFS whose back edges close them. The $ref on the cycle is what to fix.
  const state = new Map<string, "open" | "done">();
  const stack: Edge[] = [];
  const looped = new Set<string>();
  const visit = (id: string) => {
    state.set(id, "open");
    for (const e of edges.get(id) ?? []) {
      const s = state.get(e.to);
      if (s === "open") {
        // The edges after the one that entered e.to (none entered the DFS's start: -1 + 1).
        const start = stack.findIndex((x) => x.to === e.to) + 1;
        const ref = e.ref ?? stack.slice(start).find((x) => x.ref)?.ref;
        if (ref && !looped.has(ref)) looped.add(ref), fail(ref, "refers to itself without end");
      } else if (s === undefined) {
        stack.push(e);
        visit(e.to);
        stack.pop();
      }
    }
    state.set(id, "done");
  };
  for (const id of paths.keys()) if (!state.has(id)) visit(id);
  if (issues.length > 0) return issues;

  const expansion = new Map<string, number>();
  const expand = (id: string): number => {
    let n = expansion.get(id);
    if (n === undefined) {
      n = 1;
      for (const e of edges.get(id) ?? []) n = Math.min(n + expand(e.to), MAX_EXPANSION + 1);
      expansion.set(id, n);
    }
    return n;
  };
  // Named where it crosses the limit: the outermost schema that does is rarely the one to change.
  const crossing = [...paths].find(([id]) => expand(id) > MAX_EXPANSION && (edges.get(id) ?? []).every((e) => expand(e.to) <= MAX_EXPANSION));
  if (crossing) return [{ path: crossing[1], message: `expands into more than ${MAX_EXPANSION} subschemas for one value (through $ref, allOf, anyOf, oneOf...)` }];

  try {
    const { lookup } = compile(root);
    for (const r of refs) if (lookup[r.holder.__absolute_ref__ ?? r.ref] === undefined) fail(r.path, "$ref must point inside this schema");
  } catch (error) {
    fail(at, `cannot be compiled: ${error instanceof Error ? error.message : String(error)}`);
  }
  return issues;
}

function compile(root: unknown) {
  const schema = root as Schema | boolean;
  return { validator: new Validator(schema, "2020-12", false), lookup: dereference(schema) };
}

/**
 * cfworker's validator (all errors, not only the first) over a copy of a
 * schema checkJsonSchema accepted: cfworker marks the schema's objects as it
 * indexes them. `root` and `lookup` let a caller find the schema value behind
 * an error's keywordLocation ($ref steps resolve through lookup).
 */
export function metadataValidator(schema: unknown): { validator: Validator; root: unknown; lookup: Record<string, Schema | boolean> } {
  const root = structuredClone(schema);
  return { root, ...compile(root) };
}
