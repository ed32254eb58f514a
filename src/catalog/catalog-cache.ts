import type { Issue } from "../lib/validate";
import type { Display, ShapeRow } from "../model/event-shape";
import type { NewEvent } from "../model/new-event";
import type { OcsfView } from "../model/export-formats";
import type { OcsfClass } from "../model/ocsf";
import type { CatalogSettings, CatalogSnapshot, StoredSchema } from "./catalog-store";
import { compileTemplate, type DisplayFields } from "./display-template";
import { eventChecker, type CheckedEvent } from "./event-check";

/**
 * The catalog as the worker uses it: the ledger's snapshot (catalog-store.ts)
 * with each action's checker and sentence compiled on first use, cached per
 * isolate. Ingest may use a copy of any age: it sends the copy's revision
 * with the events and the ledger refuses a stale one (then ingest fetches
 * again). Reads accept a copy up to READ_MAX_AGE_MS old: a sentence changed a
 * few seconds ago may still render the old way on another isolate.
 */

export const READ_MAX_AGE_MS = 10_000;

interface Compiled {
  schema: StoredSchema;
  check?: (event: CheckedEvent) => Issue[];
  render?: ((fields: DisplayFields) => string) | null;
}

export class Catalog {
  readonly revision: number;
  readonly settings: CatalogSettings;
  readonly fetchedAt = Date.now();
  private readonly newest = new Map<string, Compiled>();
  /** Renders each event's sentence from its action's newest template (src/model/event-shape.ts); undefined when no schema has one. */
  readonly display: Display | undefined;

  constructor(snapshot: CatalogSnapshot) {
    this.revision = snapshot.revision;
    this.settings = snapshot.settings;
    for (const schema of snapshot.schemas) this.newest.set(schema.action, { schema });
    this.display = snapshot.schemas.some((s) => s.document.display) ? (row, view) => this.render(row, view) : undefined;
  }

  /** The newest version of every action with a schema. */
  schemas(): StoredSchema[] {
    return [...this.newest.values()].map((c) => c.schema);
  }

  /** What format=ocsf needs of the catalog: each action's class, where its newest schema names one, and the sentences. */
  ocsfView(): OcsfView {
    const classes = new Map<string, OcsfClass>();
    for (const { schema } of this.newest.values()) if (schema.document.ocsf) classes.set(schema.action, schema.document.ocsf);
    return { classes, display: this.display };
  }

  schema(action: string): StoredSchema | null {
    return this.newest.get(action)?.schema ?? null;
  }

  /** The issues of one event against its action's newest version. */
  check(action: string, event: CheckedEvent): Issue[] {
    const entry = this.newest.get(action);
    if (!entry) return [];
    entry.check ??= eventChecker(entry.schema.document);
    return entry.check(event);
  }

  private render(row: ShapeRow, view: { actor_email: string | null; metadata: string; changes: string | null }): string | null {
    const entry = this.newest.get(row.action);
    if (!entry) return null;
    if (entry.render === undefined) entry.render = entry.schema.document.display ? compileTemplate(entry.schema.document.display) : null;
    if (entry.render === null) return null;
    return entry.render({
      id: row.id,
      action: row.action,
      organization: row.organization,
      occurred_at: row.occurred_at,
      actor_id: row.actor_id,
      actor_type: row.actor_type,
      actor_name: row.actor_name,
      actor_email: view.actor_email,
      targets: row.targets,
      metadata: view.metadata,
      changes: view.changes,
    });
  }
}

const cached = new Map<string, Catalog>();
/** Older versions, asked for by events that send `version`: immutable, so kept as long as the isolate lives. */
const versions = new Map<string, (event: CheckedEvent) => Issue[]>();

function ledger(env: Env, projectId: string) {
  return env.LEDGER.get(env.LEDGER.idFromName(projectId));
}

/** The project's catalog, fetched from its ledger when this isolate has none younger than maxAgeMs. */
export async function catalogFor(env: Env, projectId: string, maxAgeMs = READ_MAX_AGE_MS): Promise<Catalog> {
  const have = cached.get(projectId);
  if (have && Date.now() - have.fetchedAt <= maxAgeMs) return have;
  const catalog = new Catalog(await ledger(env, projectId).catalogSnapshot());
  cached.set(projectId, catalog);
  return catalog;
}

/** After a change this isolate made, or a stale answer from the ledger. */
export function forgetCatalog(projectId: string): void {
  cached.delete(projectId);
}

/** Thrown for an event that asks for a version its action does not have. */
export class UnknownVersionError extends Error {
  constructor(
    readonly index: number,
    readonly action: string,
    readonly version: number,
  ) {
    super(`action ${JSON.stringify(action)} has no schema version ${version}`);
  }
}

/** What checking a request's events found: the first refused event's issues (enforce), else nothing. */
export interface Refusal {
  index: number;
  issues: Issue[];
  schema_version: number | null;
}

/**
 * Checks events against the catalog as its settings say, and marks each with
 * the version it was checked against and whether it passed (both go into the
 * hash). `askedVersions`: the `version` each event sent (parseEvent leaves it
 * in schema_version, which this overwrites). Answers the first refusal under `enforce`; under `warn` nothing is
 * refused. In mode off, and for actions without a schema, events are left
 * unmarked (a `version` they sent is ignored in mode off).
 */
export async function checkEvents(env: Env, projectId: string, catalog: Catalog, events: NewEvent[], askedVersions: Array<number | null>): Promise<Refusal | null> {
  const { mode, unknown_actions } = catalog.settings;
  for (const [index, event] of events.entries()) {
    const asked = askedVersions[index] ?? null;
    event.schema_version = null;
    event.schema_valid = null;
    if (mode === "off") continue;
    const newest = catalog.schema(event.action);
    if (newest === null) {
      if (asked !== null) throw new UnknownVersionError(index, event.action, asked);
      if (mode === "enforce" && unknown_actions === "reject") {
        return { index, schema_version: null, issues: [{ path: "action", message: `"${event.action}" has no schema in this project's catalog, which rejects unknown actions` }] };
      }
      continue;
    }
    const fields: CheckedEvent = { action: event.action, actor_type: event.actor_type, targets: event.targets, metadata: event.metadata, changes: event.changes ?? null };
    let version = newest.version;
    let issues: Issue[];
    if (asked === null || asked === newest.version) issues = catalog.check(event.action, fields);
    else {
      issues = (await versionChecker(env, projectId, event.action, asked, index))(fields);
      version = asked;
    }
    if (mode === "enforce" && issues.length > 0) return { index, schema_version: version, issues };
    event.schema_version = version;
    event.schema_valid = issues.length === 0;
  }
  return null;
}

async function versionChecker(env: Env, projectId: string, action: string, version: number, index: number) {
  const key = `${projectId}\u0000${action}\u0000${version}`;
  let check = versions.get(key);
  if (!check) {
    const schema = await ledger(env, projectId).schemaVersion(action, version);
    if (!schema) throw new UnknownVersionError(index, action, version);
    check = eventChecker(schema.document);
    versions.set(key, check);
  }
  return check;
}
