import type { Child } from "hono/jsx";
import { grants, type Scope } from "../../auth/scopes";

/** Where the build puts the console's static files (src/scripts/docs-assets.mjs); served by the assets, never a CDN. */
export const ASSETS = "/console/assets";

/**
 * Every console page: no inline script or style (the CSP forbids both), one
 * stylesheet and at most a module script of ours, all from this Worker.
 */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

export interface Viewer {
  projectId: string;
  keyPrefix: string;
  scopes: Scope[];
  csrf: string;
  expiresAt: string;
}

export type Section = "events" | "catalog" | "integrity" | "exports" | "streams" | "alerts" | "retention" | "keys";

const NAV: { id: Section; label: string; needs: Scope }[] = [
  { id: "events", label: "Events", needs: "read" },
  { id: "catalog", label: "Catalog", needs: "read" },
  { id: "integrity", label: "Integrity", needs: "read" },
  { id: "exports", label: "Exports", needs: "read" },
  { id: "streams", label: "Streams", needs: "read" },
  { id: "alerts", label: "Alerts", needs: "read" },
  { id: "retention", label: "Retention", needs: "read" },
  { id: "keys", label: "Keys", needs: "admin" },
];

export function Page(props: { title: string; viewer?: Viewer; active?: Section; script?: string; styles?: string[]; children: Child }) {
  const { viewer } = props;
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="robots" content="noindex" />
        {viewer ? <meta name="csrf-token" content={viewer.csrf} /> : null}
        <title>{`${props.title} · Witness console`}</title>
        {(props.styles ?? []).map((s) => (
          <link rel="stylesheet" href={`${ASSETS}/${s}`} />
        ))}
        <link rel="stylesheet" href={`${ASSETS}/console.css`} />
        {props.script ? <script type="module" src={`${ASSETS}/${props.script}`}></script> : null}
      </head>
      <body>
        <a class="skip" href="#main">
          Skip to content
        </a>
        <header class="top">
          <a class="brand" href="/console">
            Witness console
          </a>
          {viewer ? (
            <>
              <nav aria-label="Console">
                <ul>
                  {NAV.filter((n) => grants(viewer.scopes, n.needs)).map((n) => (
                    <li>
                      <a href={`/console/${n.id}`} aria-current={props.active === n.id ? "page" : undefined}>
                        {n.label}
                      </a>
                    </li>
                  ))}
                </ul>
              </nav>
              <form method="post" action="/console/sign-out" class="signout">
                <input type="hidden" name="csrf" value={viewer.csrf} />
                <span class="who">
                  Project <strong>{viewer.projectId}</strong> · key <code>{viewer.keyPrefix}</code> ({viewer.scopes.join(", ") || "no scopes"})
                </span>
                <button type="submit">Sign out</button>
              </form>
            </>
          ) : null}
        </header>
        <main id="main">{props.children}</main>
      </body>
    </html>
  );
}

/** A count with its noun in agreement: "1 event", "2 events", "1,204 events" (`many` for nouns not made plural by "s"). */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${countText(n)} ${n === 1 ? one : many}`;
}

/** A whole number with thousands separators, the same on every runtime (no locale data needed). */
export const countText = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");

/** The one exact form of a time on the console: "2026-03-10 09:00:00 UTC". */
export function utcText(iso: string): string {
  const ms = Date.parse(iso);
  return Number.isFinite(ms) ? `${new Date(ms).toISOString().slice(0, 19).replace("T", " ")} UTC` : iso;
}

/** How long ago (or how soon) a time is, in words: "just now", "3 min ago", "1 hour ago", "2 days ago", "in 5 days". */
export function relativeTime(iso: string, now = Date.now()): string {
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms)) return iso;
  const seconds = Math.abs(now - ms) / 1000;
  const ago = (text: string) => (ms <= now ? `${text} ago` : `in ${text}`);
  if (seconds < 45) return "just now";
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return ago(`${minutes} min`);
  const hours = Math.round(seconds / 3600);
  if (hours < 24) return ago(plural(hours, "hour"));
  const days = Math.round(seconds / 86400);
  if (days < 30) return ago(plural(days, "day"));
  const months = Math.round(days / 30.44);
  if (months < 12) return ago(plural(months, "month"));
  return ago(plural(Math.max(1, Math.round(days / 365.25)), "year"));
}

/**
 * Every time the console shows: relative words, the exact UTC time in the
 * element's datetime and as its title (on hover); `exact` also writes the
 * exact time out, where the instant itself is the record (an event's page).
 */
export function When(props: { at: string | null | undefined; none?: string; exact?: boolean; now?: number }) {
  if (!props.at) return <em>{props.none ?? "never"}</em>;
  const exact = utcText(props.at);
  return (
    <>
      <time datetime={props.at} title={exact}>
        {relativeTime(props.at, props.now)}
      </time>
      {props.exact ? <span class="exact"> ({exact})</span> : null}
    </>
  );
}

/** Where the investigation pages (src/routes/console-investigate.ts) open each subject; query strings, so any id (slashes included) names its page. */
export const actorHref = (id: string) => `/console/actor?id=${encodeURIComponent(id)}`;
export const organizationHref = (id: string) => `/console/organization?id=${encodeURIComponent(id)}`;
/** An event's organization as a link to its investigation page, or nothing. */
export const OrganizationLink = ({ id }: { id: string | null }) =>
  id ? (
    <a href={organizationHref(id)} class="id">
      {id}
    </a>
  ) : null;
export const targetHref = (type: string, id: string) => `/console/target?type=${encodeURIComponent(type)}&id=${encodeURIComponent(id)}`;

/**
 * A table's own scrolling box: a table wider than the screen scrolls inside
 * it, never the page. Focusable and named, so a keyboard can scroll it too.
 * `cards`: on a narrow screen each row becomes a card, its cells labelled by
 * their data-label (every cell needs one).
 */
export function TableBox(props: { label: string; cards?: boolean; children: Child }) {
  return (
    <div class={props.cards ? "table-wrap cards" : "table-wrap"} tabindex={0} role="region" aria-label={props.label}>
      {props.children}
    </div>
  );
}

export function render(node: Child): string {
  return `<!doctype html>${node}`;
}

/** Shown instead of a page the key may not see: says which scope it lacks. */
export function Lacks(props: { scope: Scope; viewer: Viewer }) {
  const read = props.scope === "read";
  return (
    <div class="notice bad" role="alert">
      <h2>{read ? "This key cannot read" : "This page needs an admin key"}</h2>
      <p>
        The key you signed in with holds {props.viewer.scopes.join(", ") || "no scopes"}.{" "}
        {read
          ? "A key that can only send events (ingest) cannot read the log back, by design. Sign out and sign in with a key that holds read or admin."
          : "Sign in with a key that holds admin to use this page."}
      </p>
    </div>
  );
}

/** An error the API answered, shown as text. */
export function ApiProblem(props: { error: { code?: string; message?: string; details?: Record<string, unknown> } | null }) {
  if (!props.error) return null;
  // The message names only the first problem; a refused document usually has several.
  const issues = props.error.details?.issues;
  const list = Array.isArray(issues) && issues.length > 1 ? (issues as { path?: string; message?: string }[]) : [];
  return (
    <div class="notice bad" role="alert">
      <p>
        <strong>{props.error.code ?? "ERROR"}</strong>: {props.error.message ?? "The request failed"}
      </p>
      {list.length > 0 ? (
        <ul>
          {list.map((i) => (
            <li>
              {i.path ? <code>{i.path}</code> : null}
              {i.path ? ": " : null}
              {i.message ?? ""}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/** A whole page saying no: a scope the key lacks, or a refused request (message shown as text). */
export function LacksPage(props: { viewer?: Viewer; scope?: Scope; title?: string; message?: string }): string {
  const title = props.title ?? (props.scope === "admin" ? "Needs an admin key" : "This key cannot read");
  return render(
    <Page title={title} viewer={props.viewer}>
      <h1>{title}</h1>
      {props.scope && props.viewer ? (
        <Lacks scope={props.scope} viewer={props.viewer} />
      ) : (
        <p class="notice bad" role="alert">
          {props.message}
        </p>
      )}
    </Page>,
  );
}
