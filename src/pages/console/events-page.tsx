import { ApiProblem, Page, type Viewer } from "./layout";
import { queryOf, type ApiError } from "./console-api";

/** Every filter GET /v1/events and /v1/events/search take, as the form names them. */
export const FILTERS = ["q", "organization", "actor_id", "action", "actions", "actions_exclude", "ip_address", "date_from", "date_to", "limit"] as const;
export type FilterValues = Partial<Record<(typeof FILTERS)[number] | "cursor", string>>;

const LABELS: Record<(typeof FILTERS)[number], { label: string; hint?: string }> = {
  q: { label: "Search", hint: "Words in action, actor name, e-mail or id" },
  organization: { label: "Organization" },
  actor_id: { label: "Actor id" },
  action: { label: "Action (exact)" },
  actions: { label: "Any of actions", hint: "Comma-separated" },
  actions_exclude: { label: "Not these actions", hint: "Comma-separated" },
  ip_address: { label: "IP address" },
  date_from: { label: "From (occurred at)", hint: "ISO 8601 with zone, e.g. 2026-05-05T00:00:00Z" },
  date_to: { label: "To (occurred at)", hint: "ISO 8601 with zone" },
  limit: { label: "Rows per page", hint: "1 to 200" },
};

export interface EventRow {
  id: string;
  seq: number;
  action: string;
  organization: string | null;
  actor: { type?: string | null; id?: string | null; name?: string | null; email?: string | null } | null;
  targets: { type?: string | null; id?: string | null; name?: string | null }[];
  occurred_at: string;
  ip_address: string | null;
  /** The sentence its action's display template renders (null without one). */
  display?: string | null;
}

function actorText(a: EventRow["actor"]): string {
  if (!a) return "";
  return a.name ? `${a.name} (${a.id ?? "erased"})` : (a.id ?? "(erased)");
}

function targetsText(ts: EventRow["targets"]): string {
  return ts.map((t) => `${t.type ?? "?"}: ${t.name ?? t.id ?? "?"}`).join(", ");
}

export function EventsPage(props: {
  viewer: Viewer;
  values: FilterValues;
  rows: EventRow[];
  nextCursor: string | null;
  hotSince: string | null;
  error: ApiError | null;
}) {
  const { values, rows } = props;
  const base = Object.fromEntries(FILTERS.map((f) => [f, values[f]]));
  const filtered = FILTERS.some((f) => f !== "limit" && values[f]);
  return (
    <Page title="Events" viewer={props.viewer} active="events" script="events.js" styles={["uplot.min.css"]}>
      <h1>Events</h1>
      <figure class="chart" id="activity" data-from={values.date_from ?? ""} data-to={values.date_to ?? ""}>
        <figcaption>
          <span id="activity-caption">Activity of the whole project: events per hour or day, stacked by the busiest actions.</span> Drag across the chart to zoom: the table follows that time range.{" "}
          {values.date_from || values.date_to ? (
            <a href={`/console/events${queryOf({ ...base, date_from: undefined, date_to: undefined, cursor: undefined })}`}>Show the last 7 days</a>
          ) : null}
        </figcaption>
        <div id="activity-plot" class="plot"></div>
        <p id="activity-status" class="muted" role="status">
          Loading the chart…
        </p>
      </figure>
      <form method="get" action="/console/events" class="filters" aria-label="Filter events">
        {FILTERS.map((f) => (
          <label>
            <span>{LABELS[f].label}</span>
            <input
              type={f === "q" ? "search" : f === "limit" ? "number" : "text"}
              name={f}
              id={`f-${f}`}
              value={values[f] ?? ""}
              min={f === "limit" ? "1" : undefined}
              max={f === "limit" ? "200" : undefined}
              placeholder={LABELS[f].hint}
              autocomplete="off"
            />
          </label>
        ))}
        <div class="actions">
          <button type="submit">Apply filters</button>
          {filtered ? <a href="/console/events">Clear</a> : null}
        </div>
      </form>
      <ApiProblem error={props.error} />
      {props.hotSince ? (
        <p class="muted">Events received before {props.hotSince} are archived: the list and search cover newer events; open, export and verify cover all.</p>
      ) : null}
      <div class="table-wrap">
        <table class="events">
          <caption>
            {rows.length === 0 ? "No events match." : `${rows.length} events${values.cursor ? " (a later page)" : ""}, newest first`}
          </caption>
          <thead>
            <tr>
              <th scope="col">Occurred at (UTC)</th>
              <th scope="col">Action</th>
              <th scope="col">Actor</th>
              <th scope="col">Targets</th>
              <th scope="col">Organization</th>
              <th scope="col">Seq</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((e) => (
              <tr>
                <td data-label="Occurred at">
                  <time datetime={e.occurred_at}>{e.occurred_at.replace("T", " ").replace("Z", "")}</time>
                </td>
                <td data-label="Action">
                  <a href={`/console/events/${encodeURIComponent(e.id)}`} class="action">
                    {e.action}
                  </a>
                  {e.display ? <span class="sentence">{e.display}</span> : null}
                </td>
                <td data-label="Actor">{actorText(e.actor)}</td>
                <td data-label="Targets">{targetsText(e.targets)}</td>
                <td data-label="Organization">{e.organization ?? ""}</td>
                <td class="num" data-label="Seq">{e.seq}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <nav class="pager" aria-label="Pages">
        {values.cursor ? <a href={`/console/events${queryOf(base)}`}>First page</a> : null}
        {props.nextCursor ? (
          <a href={`/console/events${queryOf({ ...base, cursor: props.nextCursor })}`} rel="next">
            Next page (older)
          </a>
        ) : rows.length > 0 ? (
          <span class="muted">End of the list</span>
        ) : null}
      </nav>
    </Page>
  );
}
