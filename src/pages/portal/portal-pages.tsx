/**
 * The customers' admin portal (src/routes/portal-pages.ts serves these): what
 * a vendor's customer sees of their own organization. Server-rendered, the
 * public pages' stylesheet, no inline script or style; every value from the
 * events is rendered as text.
 */
import type { Child } from "hono/jsx";
import { Page } from "../public/layout";

export { render } from "../public/layout";
import type { Ability } from "../../auth/portal";

export const PORTAL_JS_PATH = "/portal/assets/portal.js";

const TABS: Array<[Ability, string, string]> = [
  ["events", "/portal/events", "Events"],
  ["exports", "/portal/export", "Export"],
  ["streams", "/portal/streams", "Streams"],
];

export interface PortalViewer {
  organization: string;
  abilities: Ability[];
  csrf: string;
  expiresAt: string;
}

/** The public pages' layout, with the portal's own bar: its organization, its tabs and sign-out, no links out. */
function Shell(props: { title: string; viewer?: PortalViewer; current?: Ability; scripts?: string[]; children: Child }) {
  const v = props.viewer;
  const bar = (
    <>
      <span class="brand">Audit log{v ? ` · ${v.organization}` : ""}</span>
      {v && (
        <nav aria-label="Portal">
          <ul>
            {TABS.filter(([a]) => v.abilities.includes(a)).map(([a, href, label]) => (
              <li>
                <a href={href} aria-current={props.current === a ? "page" : undefined}>
                  {label}
                </a>
              </li>
            ))}
            <li>
              <form method="post" action="/portal/sign-out">
                <input type="hidden" name="csrf" value={v.csrf} />
                <button class="button secondary" type="submit">
                  Sign out
                </button>
              </form>
            </li>
          </ul>
        </nav>
      )}
    </>
  );
  const footer = v && (
    <footer class="site-foot">
      <p class="hint">
        This session shows organization <code>{v.organization}</code> only and ends at <time datetime={v.expiresAt}>{v.expiresAt.replace("T", " ").slice(0, 16)} UTC</time>. What you change here is recorded in
        the audit log.
      </p>
    </footer>
  );
  return (
    <Page title={props.title} scripts={props.scripts} bar={bar} footer={footer} referrer="same-origin">
      {props.children}
    </Page>
  );
}

/** /portal/start: the token is in the link's fragment, so only this page's script can send it (a link unfurler's GET spends nothing). */
export function StartPage() {
  return (
    <Shell title="Open your audit-log portal" scripts={[PORTAL_JS_PATH]}>
      <h1>Open your audit-log portal</h1>
      <p class="lead">Your vendor sent you a one-time link to your organization's audit log. Opening it starts a session of one hour; the link cannot be used again.</p>
      <form method="post" action="/portal/start" id="start">
        <input type="hidden" name="token" id="token" value="" />
        <button class="button" type="submit" id="open" disabled>
          Open the portal
        </button>
      </form>
      <p class="note" id="missing" hidden>
        This address has no portal code in it. Open the whole link your vendor sent (it ends with a <code>#</code> and a code).
      </p>
      <noscript>
        <p class="note">Opening the portal needs JavaScript: the link's code stays in your browser until you press the button.</p>
      </noscript>
    </Shell>
  );
}

export function EndedPage(props: { title: string; message: string }) {
  return (
    <Shell title={props.title}>
      <h1>{props.title}</h1>
      <p class="lead">{props.message}</p>
    </Shell>
  );
}

export interface PortalEvent {
  id: string;
  action: string;
  occurred_at: string;
  display?: string | null;
  actor?: { id?: string | null; name?: string | null; type?: string | null } | null;
  targets?: Array<{ type: string; id: string; name?: string | null }>;
}

export function EventsPage(props: { viewer: PortalViewer; events: PortalEvent[]; q: string; next: string | null; error: string | null }) {
  const { viewer, events } = props;
  return (
    <Shell title={`Events · ${viewer.organization}`} viewer={viewer} current="events">
      <h1>Events</h1>
      <form method="get" action="/portal/events" role="search">
        <label for="q">Search</label>
        <input id="q" name="q" type="search" value={props.q} maxlength={200} />
        <button class="button secondary" type="submit">
          Search
        </button>
      </form>
      {props.error && <p class="note">{props.error}</p>}
      {events.length === 0 ? (
        <p>{props.q ? "No events match this search." : "No events for this organization yet."}</p>
      ) : (
        <div class="table-wrap" tabindex={0} role="region" aria-label="Events">
          <table>
            <thead>
              <tr>
                <th scope="col">When (UTC)</th>
                <th scope="col">Action</th>
                <th scope="col">Actor</th>
                <th scope="col">What happened</th>
              </tr>
            </thead>
            <tbody>
              {events.map((e) => (
                <tr>
                  <td>
                    <time datetime={e.occurred_at}>{e.occurred_at.replace("T", " ").slice(0, 19)}</time>
                  </td>
                  <td>
                    <code>{e.action}</code>
                  </td>
                  <td>{e.actor ? (e.actor.name ?? e.actor.id ?? "") : ""}</td>
                  <td>{e.display ?? (e.targets ?? []).map((t) => `${t.type} ${t.name ?? t.id}`).join(", ")}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {props.next && (
        <p>
          <a class="button secondary" href={`/portal/events?${new URLSearchParams({ ...(props.q ? { q: props.q } : {}), cursor: props.next })}`}>
            Older events
          </a>
        </p>
      )}
    </Shell>
  );
}

export function ExportPage(props: { viewer: PortalViewer }) {
  return (
    <Shell title={`Export · ${props.viewer.organization}`} viewer={props.viewer} current="exports">
      <h1>Export</h1>
      <p class="lead">Download every event of organization {props.viewer.organization}, or those of a time range.</p>
      <form method="get" action="/portal/export/download">
        <p>
          <label for="format">Format</label>
          <select id="format" name="format">
            <option value="json">JSON (the API's event shape)</option>
            <option value="csv">CSV</option>
            <option value="ocsf">OCSF 1.3.0 (JSON)</option>
          </select>
        </p>
        <p>
          <label for="date_from">From (UTC, optional)</label>
          <input id="date_from" name="date_from" type="datetime-local" />
        </p>
        <p>
          <label for="date_to">To (UTC, optional)</label>
          <input id="date_to" name="date_to" type="datetime-local" />
        </p>
        <button class="button" type="submit">
          Download
        </button>
      </form>
    </Shell>
  );
}

export interface PortalStream {
  id: string;
  type: string;
  url: string;
  status: string;
  created_at: string;
  last_error?: string | null;
}

const STREAM_TYPES: Array<[string, string]> = [
  ["webhook", "Webhook (signed, Standard Webhooks)"],
  ["splunk", "Splunk HTTP Event Collector"],
  ["datadog", "Datadog logs"],
  ["s3", "S3-compatible storage"],
];

export function StreamsPage(props: { viewer: PortalViewer; streams: PortalStream[]; notice: string | null; error: string | null; secret: string | null }) {
  const { viewer } = props;
  const form = (action: string, label: string, id: string) => (
    <form method="post" action={`/portal/streams/${encodeURIComponent(id)}/${action}`}>
      <input type="hidden" name="csrf" value={viewer.csrf} />
      <button class="button secondary" type="submit">
        {label}
      </button>
    </form>
  );
  return (
    <Shell title={`Streams · ${viewer.organization}`} viewer={viewer} current="streams">
      <h1>Streams</h1>
      <p class="lead">Send organization {viewer.organization}'s events to your own SIEM as they happen. Every stream made here carries this organization's events only.</p>
      {props.notice && (
        <p class="info" role="status">
          {props.notice}
        </p>
      )}
      {props.secret && (
        <p class="info">
          The webhook's signing secret, shown this once: <code>{props.secret}</code>
        </p>
      )}
      {props.error && (
        <p class="note" role="alert">
          {props.error}
        </p>
      )}
      {props.streams.length === 0 ? (
        <p>No streams yet.</p>
      ) : (
        <div class="table-wrap" tabindex={0} role="region" aria-label="Streams">
          <table>
            <thead>
              <tr>
                <th scope="col">Type</th>
                <th scope="col">Destination</th>
                <th scope="col">Status</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {props.streams.map((s) => (
                <tr>
                  <td>{s.type}</td>
                  <td>
                    <code>{s.url}</code>
                  </td>
                  <td>
                    {s.status}
                    {s.last_error ? ` (${s.last_error})` : ""}
                  </td>
                  <td>
                    {form("test", "Send a test event", s.id)}
                    {s.status === "paused" ? form("resume", "Resume", s.id) : form("pause", "Pause", s.id)}
                    {form("delete", "Delete", s.id)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <h2>New stream</h2>
      <form method="post" action="/portal/streams" class="card">
        <input type="hidden" name="csrf" value={viewer.csrf} />
        <p>
          <label for="type">Destination</label>
          <select id="type" name="type">
            {STREAM_TYPES.map(([value, label]) => (
              <option value={value}>{label}</option>
            ))}
          </select>
        </p>
        <p>
          <label for="url">URL (webhook, Splunk, Datadog)</label>
          <input id="url" name="url" type="url" maxlength={2048} />
        </p>
        <p>
          <label for="token">Token (Splunk HEC token or Datadog API key)</label>
          <input id="token" name="token" type="password" autocomplete="off" maxlength={4096} />
        </p>
        <fieldset>
          <legend>S3-compatible storage</legend>
          <p>
            <label for="s3_endpoint">Endpoint</label>
            <input id="s3_endpoint" name="s3_endpoint" type="url" />
          </p>
          <p>
            <label for="s3_bucket">Bucket</label>
            <input id="s3_bucket" name="s3_bucket" />
          </p>
          <p>
            <label for="s3_region">Region</label>
            <input id="s3_region" name="s3_region" />
          </p>
          <p>
            <label for="s3_prefix">Prefix (optional)</label>
            <input id="s3_prefix" name="s3_prefix" />
          </p>
          <p>
            <label for="s3_access_key_id">Access key id</label>
            <input id="s3_access_key_id" name="s3_access_key_id" autocomplete="off" />
          </p>
          <p>
            <label for="s3_secret_access_key">Secret access key</label>
            <input id="s3_secret_access_key" name="s3_secret_access_key" type="password" autocomplete="off" />
          </p>
        </fieldset>
        <p>
          <label for="format">Event format</label>
          <select id="format" name="format">
            <option value="json">JSON (the API's event shape)</option>
            <option value="ocsf">OCSF 1.3.0</option>
          </select>
        </p>
        <button class="button" type="submit">
          Create the stream
        </button>
      </form>
    </Shell>
  );
}

/** The start page's script: moves the link's code from the fragment into the form, and out of the address bar. */
export const PORTAL_JS = `(function () {
  var token = location.hash.slice(1);
  var field = document.getElementById("token");
  var button = document.getElementById("open");
  if (!field || !button) return;
  if (/^[A-Za-z0-9_-]{43}$/.test(token)) {
    field.value = token;
    button.disabled = false;
    history.replaceState(null, "", location.pathname);
  } else {
    document.getElementById("missing").hidden = false;
  }
})();
`;
