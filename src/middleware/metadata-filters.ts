import type { Context } from "hono";
import { catalogFor } from "../catalog/catalog-cache";
import { metadataSelection } from "../catalog/metadata-filters";
import { ApiError } from "../lib/errors";
import { validationError } from "../lib/validate";
import type { Reader, Selection } from "../model/event-query";
import type { AppEnv } from "./app-env";

const PREFIX = "metadata.";

/** The `metadata.<key>` parameters of a query string, each given once; an empty value counts as absent, like the other filters. */
export function metadataParams(c: Context<AppEnv>): Array<[string, string]> {
  const query = new URL(c.req.url).searchParams;
  const keys = [...new Set([...query.keys()].filter((k) => k.startsWith(PREFIX)))];
  return keys.flatMap((name) => {
    const values = query.getAll(name);
    if (values.length > 1) throw validationError([{ path: name, message: `${name} must be given once` }]);
    return values[0] === "" ? [] : [[name.slice(PREFIX.length), values[0]] as [string, string]];
  });
}

/** The same, from a JSON body's keys (POST /v1/jobs takes GET /v1/exports' filters as they are). */
export function metadataFields(body: Record<string, unknown>): Array<[string, string]> {
  return Object.entries(body).flatMap(([name, value]) => {
    if (!name.startsWith(PREFIX) || value === null || value === undefined || value === "") return [];
    if (typeof value !== "string") throw validationError([{ path: name, message: `${name} must be a string` }]);
    return [[name.slice(PREFIX.length), value] as [string, string]];
  });
}

/**
 * A selection narrowed by declared metadata fields (src/catalog/metadata-filters.ts),
 * or null when it can match nothing. An embed token that does not see metadata
 * cannot filter on it either: its answers would tell what it holds.
 */
export async function withMetadata(c: Context<AppEnv>, reader: Reader, sel: Selection | null, params: Array<[string, string]>): Promise<Selection | null> {
  if (params.length === 0 || sel === null) return sel;
  if (reader.kind === "embed" && !reader.includeMetadata) {
    throw new ApiError("FORBIDDEN", "This embed token was minted without include_metadata, so it cannot filter on metadata");
  }
  const found = metadataSelection(await catalogFor(c.env, reader.projectId), params, sel.actions);
  if (!found.ok) throw validationError(found.issues);
  if (found.actions !== null && found.actions.length === 0) return null;
  // Excluded actions are already out of the declaring ones when an include list is walked.
  const actions = found.actions?.filter((a) => !sel.exclude.includes(a)) ?? null;
  if (actions !== null && actions.length === 0) return null;
  return { ...sel, actions, exclude: actions === null ? sel.exclude : [], metadata: found.metadata };
}
