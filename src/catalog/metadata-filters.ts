import type { Issue } from "../lib/validate";
import type { MetadataMatch } from "../model/event-query";
import type { Catalog } from "./catalog-cache";
import type { StoredSchema } from "./catalog-store";

/**
 * Filters on declared metadata fields (`metadata.role=admin`): a key is
 * filterable only for the actions whose newest schema lists it in
 * `filterable`, so a filter narrows the walk to those actions (the action
 * index, no new index and no stored row per event) and tests each row's
 * metadata there. A key no schema declares stays unfilterable, as the spec
 * says metadata is not searchable by inner key.
 */

export const MAX_METADATA_FILTERS = 4;

/** The declared JSON type of `key` in a schema's metadata, as far as filters need it. */
function declaredType(schema: StoredSchema, key: string): "string" | "number" | "boolean" {
  const metadata = schema.document.metadata;
  const property = typeof metadata === "object" && metadata !== null ? (metadata.properties as Record<string, Record<string, unknown>> | undefined)?.[key] : undefined;
  const types = [property?.type].flat();
  if (types.includes("number") || types.includes("integer")) return "number";
  if (types.includes("boolean")) return "boolean";
  const listed = [...((property?.enum as unknown[] | undefined) ?? []), ...(property && "const" in property ? [property.const] : [])];
  if (listed.length > 0 && listed.every((v) => typeof v === "number")) return "number";
  if (listed.length > 0 && listed.every((v) => typeof v === "boolean")) return "boolean";
  return "string";
}

function typed(raw: string, type: "string" | "number" | "boolean"): string | number | boolean | null {
  if (type === "string") return raw;
  if (type === "boolean") return raw === "true" ? true : raw === "false" ? false : null;
  const n = Number(raw);
  return raw.trim() !== "" && Number.isFinite(n) ? n : null;
}

export type MetadataSelection = { ok: true; actions: string[] | null; metadata: MetadataMatch[] } | { ok: false; issues: Issue[] };

/**
 * `params`: the request's `metadata.<key>` values; `actions`: the actions the
 * rest of the request already narrowed to (null: any). Answers the actions to
 * walk (the declaring ones, within `actions`; an empty list matches nothing)
 * and the typed matches.
 */
export function metadataSelection(catalog: Catalog, params: Array<[string, string]>, actions: string[] | null): MetadataSelection {
  if (params.length > MAX_METADATA_FILTERS) {
    return { ok: false, issues: [{ path: "metadata", message: `at most ${MAX_METADATA_FILTERS} metadata filters per request` }] };
  }
  const issues: Issue[] = [];
  const metadata: MetadataMatch[] = [];
  let walk = actions;
  for (const [key, raw] of params) {
    const declaring = catalog.schemas().filter((s) => s.document.filterable.includes(key));
    if (declaring.length === 0) {
      issues.push({ path: `metadata.${key}`, message: `no action's schema in this project's catalog declares "${key}" filterable (PUT /v1/schemas/{action} with "filterable": ["${key}"])` });
      continue;
    }
    const type = declaredType(declaring[0], key);
    const value = typed(raw, type);
    if (value === null) {
      issues.push({ path: `metadata.${key}`, message: `must be a ${type === "number" ? "number" : "true or false"}, as its schema declares` });
      continue;
    }
    metadata.push({ key, value });
    const names = declaring.map((s) => s.action);
    walk = walk === null ? names : walk.filter((a) => names.includes(a));
  }
  return issues.length > 0 ? { ok: false, issues } : { ok: true, actions: walk, metadata };
}
