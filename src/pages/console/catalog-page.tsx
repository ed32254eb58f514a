import { grants } from "../../auth/scopes";
import type { CatalogSettings, StoredSchema, VersionInfo } from "../../catalog/catalog-store";
import type { SchemaDocument } from "../../catalog/schema-document";
import type { Issue } from "../../lib/validate";
import { ApiProblem, Page, plural, TableBox, When, type Viewer } from "./layout";
import { queryOf, type ApiError } from "./console-api";

export interface ActionRow {
  action: string;
  count: number;
  first_seen: string;
  last_seen: string;
  schema_version: number | null;
}

/** The service's own records: their shape is fixed by Witness, so the catalog never holds a schema for them. */
const isOwn = (action: string) => action.startsWith("witness.");

export const actionHref = (action: string, query: Record<string, string | undefined> = {}) => `/console/catalog/${encodeURIComponent(action)}${queryOf(query)}`;

const MODES: Record<CatalogSettings["mode"], string> = {
  off: "nothing is checked",
  warn: "every event is stored, marked with the schema version it passed or broke",
  enforce: "an event that breaks its schema is refused",
};
const UNKNOWN: Record<CatalogSettings["unknown_actions"], string> = {
  allow: "events of actions without a schema are stored",
  reject: "under enforce, an event of an action without a schema is refused",
};

/** Rollups count by the hour: the API gives the first hour's start and the last hour's end; either is shown as its hour's start. */
const Hour = (props: { at: string }) => {
  const ms = Date.parse(props.at);
  return <When at={Number.isFinite(ms) ? new Date(Math.floor(ms / 3_600_000) * 3_600_000).toISOString() : props.at} />;
};

/** The catalog: what the project records, the schemas it has, and how ingest checks events against them. */
export function CatalogPage(props: {
  viewer: Viewer;
  settings: CatalogSettings | null;
  actions: ActionRow[];
  cursor: string | null;
  nextCursor: string | null;
  schemas: StoredSchema[];
  moreSchemas: boolean;
  error: ApiError | null;
  saved: boolean;
}) {
  const admin = grants(props.viewer.scopes, "admin");
  const s = props.settings;
  return (
    <Page title="Catalog" viewer={props.viewer} active="catalog">
      <h1>Action catalog</h1>
      <ApiProblem error={props.error} />
      {props.saved ? (
        <p class="notice" role="status">
          The validation settings were saved (and recorded in the chain).
        </p>
      ) : null}
      <section class="card" aria-labelledby="settings-title">
        <h2 id="settings-title">Validation at ingest</h2>
        {s ? (
          <dl class="fields">
            <dt>Mode</dt>
            <dd>
              <span class={`badge ${s.mode === "off" ? "" : "ok"}`}>{s.mode}</span> {MODES[s.mode] ?? ""}
            </dd>
            <dt>Actions without a schema</dt>
            <dd>
              <span class="badge">{s.unknown_actions}</span> {UNKNOWN[s.unknown_actions] ?? ""}
            </dd>
          </dl>
        ) : null}
        {admin && s ? (
          <form method="post" action="/console/catalog" class="filters" aria-label="Change the validation settings">
            <input type="hidden" name="csrf" value={props.viewer.csrf} />
            <label>
              <span>Mode</span>
              <select name="mode">
                {(Object.keys(MODES) as CatalogSettings["mode"][]).map((m) => (
                  <option value={m} selected={m === s.mode}>
                    {`${m}: ${MODES[m]}`}
                  </option>
                ))}
              </select>
            </label>
            <label>
              <span>Actions without a schema</span>
              <select name="unknown_actions">
                {(Object.keys(UNKNOWN) as CatalogSettings["unknown_actions"][]).map((u) => (
                  <option value={u} selected={u === s.unknown_actions}>
                    {`${u}: ${UNKNOWN[u]}`}
                  </option>
                ))}
              </select>
            </label>
            <div class="actions">
              <button type="submit">Save the settings</button>
            </div>
          </form>
        ) : (
          <p class="muted">Changing the settings needs an admin key.</p>
        )}
      </section>

      <section class="card" aria-labelledby="actions-title">
        <h2 id="actions-title">Recorded actions</h2>
        <TableBox label="Table of recorded actions" cards>
          <table>
            <caption>
              {props.actions.length === 0
                ? "No events recorded yet."
                : `${plural(props.actions.length, "action")}${props.cursor ? " (a later page)" : ""}, in name order; counts are of every event ever recorded`}
            </caption>
            <thead>
              <tr>
                <th scope="col">Action</th>
                <th scope="col">Events</th>
                <th scope="col">First seen (hour)</th>
                <th scope="col">Last seen (hour)</th>
                <th scope="col">Schema</th>
              </tr>
            </thead>
            <tbody>
              {props.actions.map((a) => (
                <tr>
                  <td data-label="Action">{isOwn(a.action) ? <code class="id">{a.action}</code> : <a href={actionHref(a.action)} class="catalog-action id">{a.action}</a>}</td>
                  <td class="num" data-label="Events">{String(a.count)}</td>
                  <td class="when" data-label="First seen">
                    <Hour at={a.first_seen} />
                  </td>
                  <td class="when" data-label="Last seen">
                    <Hour at={a.last_seen} />
                  </td>
                  <td data-label="Schema">
                    {a.schema_version !== null ? (
                      <a href={actionHref(a.action)}>version {String(a.schema_version)}</a>
                    ) : (
                      <span class="muted">{isOwn(a.action) ? "Witness's own record" : "no schema"}</span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableBox>
        <nav class="pager" aria-label="Pages of actions">
          {props.cursor ? <a href="/console/catalog">First page</a> : null}
          {props.nextCursor ? (
            <a href={`/console/catalog${queryOf({ cursor: props.nextCursor })}`} rel="next">
              Next page
            </a>
          ) : null}
        </nav>
      </section>

      <section class="card" aria-labelledby="schemas-title">
        <h2 id="schemas-title">Schemas</h2>
        {props.schemas.length === 0 ? (
          <p class="muted">No action has a schema yet.</p>
        ) : (
          <ul class="plain">
            {props.schemas.map((sc) => (
              <li>
                <a href={actionHref(sc.action)}>{sc.action}</a> · version {String(sc.version)}
                {sc.document.description ? <span class="muted"> · {sc.document.description}</span> : null}
              </li>
            ))}
          </ul>
        )}
        {props.moreSchemas ? <p class="muted">Only the first schemas are listed; open any action by name below.</p> : null}
        <form method="get" action="/console/catalog" class="inline" aria-label="Open an action">
          <label>
            <span>Open an action by name{admin ? " (to give it a schema)" : ""}</span>
            <input type="text" name="action" required autocomplete="off" placeholder="member.role.changed" />
          </label>
          <button type="submit">Open</button>
        </form>
      </section>
    </Page>
  );
}

/** What the preview found: the template's issues, or the event it rendered and its sentence, or why there is none. */
export interface Preview {
  template: string;
  typed: boolean;
  eventId: string;
  issues: Issue[];
  event: Record<string, any> | null;
  sentence: string | null;
  error: ApiError | null;
}

function DocumentFields(props: { doc: SchemaDocument }) {
  const d = props.doc;
  return (
    <dl class="fields">
      <dt>Description</dt>
      <dd>{d.description ?? <em>none</em>}</dd>
      <dt>Metadata (JSON Schema)</dt>
      <dd>{d.metadata === null || d.metadata === undefined ? <em>any (no schema)</em> : <pre>{JSON.stringify(d.metadata, null, 2)}</pre>}</dd>
      <dt>Targets</dt>
      <dd>
        {d.targets?.length ? (
          <ul class="plain">
            {d.targets.map((t) => (
              <li>
                <code>{t.type}</code> {t.required ? "(required)" : "(optional)"}
              </li>
            ))}
          </ul>
        ) : (
          <em>any</em>
        )}
      </dd>
      <dt>Actor types</dt>
      <dd>{d.actor_types?.length ? d.actor_types.map((t, i) => <>{i > 0 ? ", " : ""}<code>{t}</code></>) : <em>any</em>}</dd>
      <dt>Change fields</dt>
      <dd>{d.changes?.fields.length ? d.changes.fields.map((f, i) => <>{i > 0 ? ", " : ""}<code>{f}</code></>) : <em>none declared</em>}</dd>
      <dt>Filterable metadata</dt>
      <dd>{d.filterable?.length ? d.filterable.map((f, i) => <>{i > 0 ? ", " : ""}<code>{f}</code></>) : <em>none</em>}</dd>
      <dt>Display template</dt>
      <dd>{d.display ? <code class="template">{d.display}</code> : <em>none</em>}</dd>
    </dl>
  );
}

const EMPTY_DOCUMENT = { description: null, metadata: null, targets: [], actor_types: null, changes: null, filterable: [], display: null };

/** The text the new-version form starts from: the shown version, ready to edit and PUT again. */
export const draftOf = (doc: SchemaDocument | null) => JSON.stringify(doc ?? EMPTY_DOCUMENT, null, 2);

/** One action: the version shown (newest unless asked), every version, the live preview of its sentence, and (admin) a new version. */
export function ActionPage(props: {
  viewer: Viewer;
  action: string;
  newest: (StoredSchema & { versions: VersionInfo[] }) | null;
  shown: StoredSchema | null;
  preview: Preview;
  draft: string;
  error: ApiError | null;
  saved: number | null;
}) {
  const { action, newest, shown, preview } = props;
  const admin = grants(props.viewer.scopes, "admin");
  const self = actionHref(action);
  const older = shown && newest && shown.version !== newest.version;
  return (
    <Page title={`Catalog: ${action}`} viewer={props.viewer} active="catalog">
      <p>
        <a href="/console/catalog">← Catalog</a> · <a href={`/console/events${queryOf({ action })}`}>Events of this action</a>
      </p>
      <h1>
        <code>{action}</code>
      </h1>
      <ApiProblem error={props.error} />
      {props.saved !== null ? (
        <p class="notice" role="status">
          Version {String(props.saved)} was saved (and recorded in the chain).
        </p>
      ) : null}

      {shown ? (
        <section class="card" aria-labelledby="version-title">
          <h2 id="version-title">
            Version {String(shown.version)} {older ? <span class="badge">older: the newest is {String(newest!.version)}</span> : <span class="badge ok">newest</span>}
          </h2>
          <DocumentFields doc={shown.document} />
          <p class="muted">
            Added <When at={shown.created_at} /> by <code>{shown.created_by}</code> · SHA-256 <code class="hash">{shown.sha256}</code>
          </p>
        </section>
      ) : newest === null && !props.error ? (
        <p class="notice">This action has no schema yet: its events are stored as they come, unchecked and without a sentence.</p>
      ) : null}

      {newest ? (
        <section class="card" aria-labelledby="versions-title">
          <h2 id="versions-title">Versions</h2>
          <TableBox label="Table of versions">
          <table>
            <caption>{`${plural(newest.versions.length, "version")}, oldest first; each is immutable`}</caption>
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col">Added at</th>
                <th scope="col">By</th>
                <th scope="col">SHA-256</th>
              </tr>
            </thead>
            <tbody>
              {newest.versions.map((v) => (
                <tr>
                  <td>
                    <a href={actionHref(action, { version: String(v.version) })} aria-current={shown?.version === v.version ? "page" : undefined} class="version">
                      version {String(v.version)}
                    </a>
                  </td>
                  <td class="when">
                    <When at={v.created_at} />
                  </td>
                  <td>
                    <code>{v.created_by}</code>
                  </td>
                  <td class="hash">
                    <code class="hash">{v.sha256}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          </TableBox>
        </section>
      ) : null}

      <section class="card" id="preview" aria-labelledby="preview-title">
        <h2 id="preview-title">Preview the sentence</h2>
        <p class="muted">
          Renders a display template against a real event of this project: the {older ? "shown version's" : "current"} template, or one you type here (nothing is saved).
          Leave the event blank for the most recent event of this action.
        </p>
        <form method="get" action={self} class="stack" aria-label="Preview a display template">
          {older ? <input type="hidden" name="version" value={String(shown!.version)} /> : null}
          <label>
            <span>Display template</span>
            <textarea name="template" rows={3}>
              {preview.template}
            </textarea>
          </label>
          <label>
            <span>Event id (blank: the most recent event of this action)</span>
            <input type="text" name="event" value={preview.eventId} autocomplete="off" />
          </label>
          <div>
            <button type="submit">Preview</button>
          </div>
        </form>
        <div class="preview-result" role="status">
          {preview.issues.length > 0 ? (
            <div class="notice bad">
              <p>
                <strong>This template is not valid</strong>; it renders nothing until fixed:
              </p>
              <ul class="issues">
                {preview.issues.map((i) => (
                  <li>{i.message}</li>
                ))}
              </ul>
            </div>
          ) : !preview.template ? (
            <p class="muted">No display template to preview: type one above.</p>
          ) : (
            <>
              <ApiProblem error={preview.error} />
              {preview.event ? (
                <>
                  <p>
                    {preview.typed ? "The typed template" : "The template"} renders, for event{" "}
                    <a href={`/console/events/${encodeURIComponent(preview.event.id)}`}>#{String(preview.event.seq)}</a> (<When at={preview.event.occurred_at} />
                    {preview.event.action !== action ? <>, an event of <code>{preview.event.action}</code></> : null}):
                  </p>
                  {preview.sentence ? <p class="sentence lead">{preview.sentence}</p> : <p class="muted">(an empty sentence: every path it names is missing from this event)</p>}
                </>
              ) : !preview.error ? (
                <p class="muted">This action has no events yet: give an event id to preview against another event.</p>
              ) : null}
            </>
          )}
        </div>
      </section>

      {admin ? (
        <section class="card" aria-labelledby="new-version-title">
          <h2 id="new-version-title">Add version {String((newest?.version ?? 0) + 1)}</h2>
          <form method="post" action={self} class="stack">
            <input type="hidden" name="csrf" value={props.viewer.csrf} />
            <label>
              <span>
                The schema document as JSON: description, metadata (a JSON Schema), targets, actor_types, changes, filterable and display. Versions are
                immutable: saving adds a new one, checked from then on.
              </span>
              <textarea name="document" rows={18} spellcheck={false}>
                {props.draft}
              </textarea>
            </label>
            <div>
              <button type="submit">Save as version {String((newest?.version ?? 0) + 1)}</button>
            </div>
          </form>
        </section>
      ) : (
        <p class="muted">Adding a version needs an admin key.</p>
      )}
    </Page>
  );
}
