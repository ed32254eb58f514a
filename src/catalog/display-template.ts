/**
 * The display sentence of an action's events ("Ada made bob@example.com an
 * admin"), rendered at read time from the template in the action's schema.
 *
 * Syntax: literal text with `{expression}` placeholders; `{{` and `}}` are
 * literal braces. An expression is one or more paths separated by `|`: the
 * first that renders non-empty wins, and a final quoted literal is the
 * default (`{actor.name|actor.id|"someone"}`; it may not contain `"`).
 * Spaces around paths are ignored. Paths:
 *   id, action, organization, occurred_at
 *   actor.id, actor.type, actor.name, actor.email
 *   metadata.<key>(.<key>)*      up to 8 keys; a key is one or more characters
 *                                other than . | { } " and whitespace; an array
 *                                element by its index (metadata.tags.0)
 *   targets.<type>.<field>       field id, name or type of the first target of that type
 *   changes.<field>.before|after the entry of changes whose field is <field>
 * Strings render as they are, numbers and booleans as text, objects and
 * arrays as JSON, and anything missing as "". Lookups see only the event's own
 * keys, never inherited ones (`{metadata.constructor}` is "" unless the
 * metadata has that key). The output is plain text: every surface escapes it.
 */
import type { Issue } from "../lib/validate";

export const MAX_TEMPLATE_CHARS = 1000;
export const MAX_DISPLAY_CHARS = 2000;
const MAX_METADATA_KEYS = 8;

export interface DisplayFields {
  id: string;
  action: string;
  organization: string | null;
  occurred_at: string;
  actor_id: string | null;
  actor_type: string | null;
  actor_name: string | null;
  actor_email: string | null;
  /** Canonical JSON text of [{type, id, name}]. */
  targets: string;
  /** JSON text of an object, or "null" when withheld from this reader. */
  metadata: string;
  /** JSON text of [{field, before?, after?}], or null. */
  changes: string | null;
}

/** One render's view of an event: each JSON column is parsed at most once, and only when a path asks for it. */
interface Scope {
  fields: DisplayFields;
  parsed: Partial<Record<"metadata" | "targets" | "changes", unknown>>;
}
type Getter = (scope: Scope) => unknown;
type Part = string | { paths: Getter[]; fallback: string };

const KEY = /^[^.|{}"\s]+$/;
const INDEX = /^(0|[1-9]\d*)$/;
const ROOTS = "id, action, organization, occurred_at, actor, metadata, targets, changes";

function json(scope: Scope, column: "metadata" | "targets" | "changes"): unknown {
  if (!(column in scope.parsed)) {
    const text = scope.fields[column];
    try {
      scope.parsed[column] = text === null ? null : JSON.parse(text);
    } catch {
      scope.parsed[column] = null;
    }
  }
  return scope.parsed[column];
}

function child(value: unknown, key: string): unknown {
  if (Array.isArray(value)) return INDEX.test(key) ? value[Number(key)] : undefined;
  if (typeof value === "object" && value !== null && Object.hasOwn(value, key)) return (value as Record<string, unknown>)[key];
  return undefined;
}

/** The first entry of a JSON array whose `key` is `equals`. */
function entry(list: unknown, key: string, equals: string): unknown {
  return Array.isArray(list) ? list.find((e) => child(e, key) === equals) : undefined;
}

function text(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return typeof value === "object" && value !== null ? JSON.stringify(value) : "";
}

/** A path's getter, or a problem with it. */
function compilePath(path: string): Getter | string {
  const keys = path.split(".");
  const bad = keys.find((k) => !KEY.test(k));
  if (bad !== undefined) return `"${path}" is not a path: keys are one or more characters other than . | { } " and spaces`;
  const [root, ...rest] = keys;
  switch (root) {
    case "id":
    case "action":
    case "organization":
    case "occurred_at":
      return rest.length === 0 ? (s) => s.fields[root] : `"${root}" has no fields`;
    case "actor": {
      const field = rest[0] as "id" | "type" | "name" | "email";
      if (rest.length !== 1 || !["id", "type", "name", "email"].includes(field)) return `"${path}": actor paths are actor.id, actor.type, actor.name and actor.email`;
      const column = `actor_${field}` as const;
      return (s) => s.fields[column];
    }
    case "metadata":
      if (rest.length === 0) return "metadata needs a key, as in metadata.role";
      if (rest.length > MAX_METADATA_KEYS) return `"${path}" has too many keys after metadata (${rest.length}; at most ${MAX_METADATA_KEYS})`;
      return (s) => rest.reduce(child, json(s, "metadata"));
    case "targets": {
      if (rest.length < 2) return `missing field after "${path}" (targets.<type>.id, .name or .type)`;
      const field = rest[rest.length - 1];
      if (!["id", "name", "type"].includes(field)) return `"${path}" must end in .id, .name or .type`;
      // A target type may itself hold dots: everything between targets. and the field.
      const type = rest.slice(0, -1).join(".");
      return (s) => child(entry(json(s, "targets"), "type", type), field);
    }
    case "changes": {
      if (rest.length !== 2 || (rest[1] !== "before" && rest[1] !== "after")) return `"${path}" must be changes.<field>.before or changes.<field>.after`;
      const [field, side] = rest;
      return (s) => child(entry(json(s, "changes"), "field", field), side);
    }
    default:
      return `unknown path root "${root}" (one of ${ROOTS})`;
  }
}

function parse(template: string): { parts: Part[]; issues: Issue[] } {
  const parts: Part[] = [];
  const issues: Issue[] = [];
  const fail = (index: number, problem: string) => issues.push({ path: "display", message: `character ${index + 1}: ${problem}` });
  if (template.length > MAX_TEMPLATE_CHARS) issues.push({ path: "display", message: `is ${template.length} characters; at most ${MAX_TEMPLATE_CHARS}` });
  let literal = "";
  for (let i = 0; i < template.length; i++) {
    const c = template[i];
    if ((c === "{" || c === "}") && template[i + 1] === c) {
      literal += c;
      i++;
    } else if (c === "}") fail(i, 'stray "}" (write "}}" for a literal brace)');
    else if (c !== "{") literal += c;
    else {
      let end = i + 1;
      let quoted = false;
      for (; end < template.length && (quoted || template[end] !== "}"); end++) if (template[end] === '"') quoted = !quoted;
      if (end === template.length) {
        fail(i, quoted ? 'unclosed "{" (a quote inside it is never closed)' : 'unclosed "{"');
        break;
      }
      const expression = compileExpression(template, i, end, fail);
      if (expression) {
        if (literal) parts.push(literal);
        literal = "";
        parts.push(expression);
      }
      i = end;
    }
  }
  if (literal) parts.push(literal);
  return { parts, issues };
}

/** The expression between the braces at open and close. */
function compileExpression(template: string, open: number, close: number, fail: (index: number, problem: string) => void): Part | null {
  const alternatives: Array<{ text: string; at: number }> = [];
  let from = open + 1;
  let quoted = false;
  for (let k = from; k <= close; k++) {
    if (k < close && template[k] === '"') quoted = !quoted;
    else if (k === close || (!quoted && template[k] === "|")) {
      const raw = template.slice(from, k);
      alternatives.push({ text: raw.trim(), at: from + raw.length - raw.trimStart().length });
      from = k + 1;
    }
  }
  if (alternatives.length === 1 && alternatives[0].text === "") return fail(open, "empty expression"), null;
  const paths: Getter[] = [];
  let fallback = "";
  let ok = true;
  alternatives.forEach(({ text: alt, at }, n) => {
    const problem =
      alt === "" ? 'empty path between "|"'
      : !alt.startsWith('"') ? null
      : n === 0 ? "a quoted default needs a path before it"
      : n < alternatives.length - 1 ? "a quoted default must come last"
      : alt.length < 2 || !alt.endsWith('"') || alt.slice(1, -1).includes('"') ? "a quoted default is one string in double quotes"
      : null;
    if (problem) return (ok = false), fail(at, problem);
    if (alt.startsWith('"')) return void (fallback = alt.slice(1, -1));
    const getter = compilePath(alt);
    if (typeof getter === "string") return (ok = false), fail(at, getter);
    paths.push(getter);
  });
  return ok ? { paths, fallback } : null;
}

/** The template's problems, each at path "display" with the character it starts at (1-based). */
export function checkTemplate(template: string): Issue[] {
  return parse(template).issues;
}

/** Parses once; the function it returns renders one event and never throws. */
export function compileTemplate(template: string): (fields: DisplayFields) => string {
  const { parts, issues } = parse(template);
  if (issues.length > 0) throw new Error(`invalid display template: ${issues.map((i) => i.message).join("; ")}`);
  return (fields) => {
    const scope: Scope = { fields, parsed: {} };
    let out = "";
    for (const part of parts) {
      if (typeof part === "string") out += part;
      else {
        let value = "";
        for (const get of part.paths) if ((value = text(get(scope))) !== "") break;
        out += value || part.fallback;
      }
      if (out.length > MAX_DISPLAY_CHARS) break;
    }
    if (out.length <= MAX_DISPLAY_CHARS) return out;
    // One character for the ellipsis, and never half of a surrogate pair.
    let cut = MAX_DISPLAY_CHARS - 1;
    if ((out.charCodeAt(cut - 1) & 0xfc00) === 0xd800) cut--;
    return `${out.slice(0, cut)}…`;
  };
}
