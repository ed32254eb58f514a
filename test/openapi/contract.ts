// Contract checks of responses against the OpenAPI document: the operation for
// the path, method and status must be documented, and a JSON body must match
// its schema. A small JSON Schema (2020-12) checker covers what zod's
// generator emits; no dependency (ajv compiles with new Function, which
// workerd refuses).
type Schema = Record<string, any> | boolean;
type Doc = { paths: Record<string, Record<string, any>>; components: Record<string, Record<string, any>> };

const METHODS = new Set(["get", "post", "put", "delete", "patch"]);

function resolve(doc: Doc, node: any): any {
  while (node && typeof node === "object" && typeof node.$ref === "string") {
    const [, , kind, name] = node.$ref.split("/");
    node = doc.components[kind]?.[name];
  }
  return node;
}

function typeOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

/** Errors of `value` against `schema` (empty when it matches). */
export function check(doc: Doc, schema: Schema, value: unknown, at = "$"): string[] {
  if (schema === true || schema === undefined) return [];
  if (schema === false) return [`${at}: no value is allowed here`];
  const s = schema.$ref ? resolve(doc, schema) : schema;
  if (s !== schema) return check(doc, s, value, at);
  const errors: string[] = [];
  const t = typeOf(value);
  if (s.type !== undefined) {
    const types: string[] = Array.isArray(s.type) ? s.type : [s.type];
    const ok = types.includes(t) || (t === "integer" && types.includes("number"));
    if (!ok) return [`${at}: expected ${types.join("|")}, got ${t}`];
  }
  if (s.nullable && value === null) return [];
  if ("const" in s && JSON.stringify(s.const) !== JSON.stringify(value)) errors.push(`${at}: expected ${JSON.stringify(s.const)}`);
  if (s.enum && !s.enum.some((e: unknown) => JSON.stringify(e) === JSON.stringify(value))) errors.push(`${at}: ${JSON.stringify(value)} is not one of ${JSON.stringify(s.enum)}`);
  if (t === "string") {
    const v = value as string;
    if (s.minLength !== undefined && [...v].length < s.minLength) errors.push(`${at}: shorter than ${s.minLength}`);
    if (s.maxLength !== undefined && [...v].length > s.maxLength) errors.push(`${at}: longer than ${s.maxLength}`);
    if (s.pattern !== undefined && !new RegExp(s.pattern, "u").test(v)) errors.push(`${at}: does not match ${s.pattern}`);
  }
  if (t === "number" || t === "integer") {
    const v = value as number;
    if (s.minimum !== undefined && v < s.minimum) errors.push(`${at}: below ${s.minimum}`);
    if (s.maximum !== undefined && v > s.maximum) errors.push(`${at}: above ${s.maximum}`);
    if (typeof s.exclusiveMinimum === "number" && v <= s.exclusiveMinimum) errors.push(`${at}: not above ${s.exclusiveMinimum}`);
    if (typeof s.exclusiveMaximum === "number" && v >= s.exclusiveMaximum) errors.push(`${at}: not below ${s.exclusiveMaximum}`);
  }
  if (t === "array") {
    const v = value as unknown[];
    if (s.minItems !== undefined && v.length < s.minItems) errors.push(`${at}: fewer than ${s.minItems} items`);
    if (s.maxItems !== undefined && v.length > s.maxItems) errors.push(`${at}: more than ${s.maxItems} items`);
    const prefix: Schema[] = s.prefixItems ?? [];
    v.forEach((item, i) => {
      const itemSchema = i < prefix.length ? prefix[i] : s.items;
      if (itemSchema !== undefined) errors.push(...check(doc, itemSchema, item, `${at}[${i}]`));
    });
  }
  if (t === "object") {
    const v = value as Record<string, unknown>;
    for (const key of s.required ?? []) if (!(key in v)) errors.push(`${at}: missing ${key}`);
    const props: Record<string, Schema> = s.properties ?? {};
    for (const [key, item] of Object.entries(v)) {
      if (key in props) errors.push(...check(doc, props[key], item, `${at}.${key}`));
      // Every field of a response is declared: an object that lists its properties answers no others,
      // even where it stays open to future fields (additionalProperties: {}); only maps (no properties) hold any key.
      else if (s.properties !== undefined) errors.push(`${at}.${key}: not declared in the document`);
      else if (s.additionalProperties !== undefined) errors.push(...check(doc, s.additionalProperties, item, `${at}.${key}`));
    }
  }
  for (const sub of s.allOf ?? []) errors.push(...check(doc, sub, value, at));
  if (s.anyOf && !s.anyOf.some((sub: Schema) => check(doc, sub, value, at).length === 0)) errors.push(`${at}: matches none of anyOf`);
  if (s.oneOf && s.oneOf.filter((sub: Schema) => check(doc, sub, value, at).length === 0).length !== 1) errors.push(`${at}: does not match exactly one of oneOf`);
  return errors;
}

/** The document's path template for a request path, most literal first (/v1/events/search before /v1/events/{id}). */
export function matchPath(doc: Doc, path: string): string | null {
  const templates = Object.keys(doc.paths).sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0));
  for (const template of templates) {
    const source = template
      .split(/(\{[^}]+\})/)
      // A tile index holds slashes past 999 (x001/234), raw or percent-encoded.
      .map((part) => (part === "{index}" ? "((?:x[0-9]{3}(?:/|%2F))*[^/]+)" : part.startsWith("{") ? "([^/]+)" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
      .join("");
    if (new RegExp(`^${source}$`).test(path)) return template;
  }
  return null;
}

export interface Checked {
  method: string;
  path: string;
  status: number;
  contentType: string | null;
  text: string;
}

/** Throws when the response is not what the document says it can be. */
export function checkResponse(doc: Doc, res: Checked): void {
  const method = res.method.toLowerCase();
  if (!METHODS.has(method)) return;
  const path = res.path.split("?")[0];
  const template = matchPath(doc, path);
  const operation = template ? doc.paths[template][method] : undefined;
  const where = `${res.method} ${path} -> ${res.status}`;
  if (!operation) {
    // Not in the document (an unknown path, or a route the coverage test in document.test.ts
    // reports as undocumented): its errors are still the one envelope.
    if (res.status >= 400 && res.contentType?.startsWith("application/json")) fail(where, check(doc, { $ref: "#/components/schemas/ErrorResponse" }, JSON.parse(res.text)));
    return;
  }
  const response = resolve(doc, operation.responses[String(res.status)] ?? operation.responses.default);
  if (!response) throw new Error(`contract: ${where} is not in the OpenAPI document (documented: ${Object.keys(operation.responses).join(", ")})`);
  const content: Record<string, { schema?: Schema }> | undefined = response.content;
  if (!content) {
    if (res.text !== "") throw new Error(`contract: ${where} has a body, but the document gives it none`);
    return;
  }
  const type = (res.contentType ?? "").split(";")[0].trim().toLowerCase();
  const media = content[type];
  if (!media) throw new Error(`contract: ${where} answered ${type || "no Content-Type"}; the document says ${Object.keys(content).join(", ")}`);
  if (type === "application/json" && media.schema !== undefined) fail(where, check(doc, media.schema, JSON.parse(res.text)));
}

function fail(where: string, errors: string[]): void {
  if (errors.length > 0) throw new Error(`contract: ${where} does not match the OpenAPI document:\n  ${errors.slice(0, 10).join("\n  ")}`);
}
