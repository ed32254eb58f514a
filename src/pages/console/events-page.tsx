import { ApiProblem, actorHref, countText, OrganizationLink, Page, plural, TableBox, targetHref, When, type Viewer } from "./layout";
import { queryOf, type ApiError } from "./console-api";
import type { z } from "zod";
import type { activitySchema } from "../../schemas/stats";

/** Every filter GET /v1/events and /v1/events/search take, as the form names them. */
export const FILTERS = ["q", "organization", "actor_id", "action", "actions", "actions_exclude", "ip_address", "date_from", "date_to", "limit"] as const;
export type FilterValues = Partial<Record<(typeof FILTERS)[number] | "cursor", string>>;

const LABELS: Record<(typeof FILTERS)[number], { label: string; short: string; hint?: string }> = {
  q: { label: "Search", short: "search", hint: "Words in action, actor name, e-mail or id" },
  organization: { label: "Organization", short: "organization" },
  actor_id: { label: "Actor id", short: "actor" },
  action: { label: "Action (exact)", short: "action" },
  actions: { label: "Any of actions", short: "any of actions", hint: "Comma-separated" },
  actions_exclude: { label: "Not these actions", short: "not these actions", hint: "Comma-separated" },
  ip_address: { label: "IP address", short: "IP address" },
  date_from: { label: "From (occurred at)", short: "from", hint: "ISO 8601 with zone, e.g. 2026-05-05T00:00:00Z" },
  date_to: { label: "To (occurred at)", short: "to", hint: "ISO 8601 with zone" },
  limit: { label: "Rows per page", short: "rows per page", hint: "1 to 200" },
};

/** The filters that narrow which events match (the page size does not). */
export const activeFilters = (values: FilterValues) => FILTERS.filter((f) => f !== "limit" && values[f]);

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

// ---- The activity chart: what the table's question matches, counted per hour or day ----

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** Without dates the chart shows the week up to now. */
export const CHART_DAYS = 7;
/** Hours up to this span, days beyond (as GET /v1/stats/activity). */
const HOURLY_UP_TO_MS = 14 * DAY_MS;
/** Longest range in buckets the chart draws (as the rollups answer). */
const MAX_BUCKETS = 2000;
/** Actions drawn as their own series; the rest are summed as "other actions". */
const TOP_ACTIONS = 6;
/**
 * Where the rollups cannot answer, the chart counts at most this many pages of
 * the list's largest page of matching events: five of a list (1,000 events, 5
 * units of the per-IP budget), one of a search (200 events, 5 units too: a
 * search page costs five times a list page, src/auth/rate-cost.ts).
 */
export const CHART_PAGE_ROWS = 200;
export const chartPages = (values: FilterValues) => (values.q ? 1 : 5);
export const CHART_MAX_EVENTS = CHART_PAGE_ROWS * 5;

export interface ChartRange {
  from: string;
  to: string;
  /** Neither date was given: the last CHART_DAYS days. */
  recent: boolean;
  /** Only date_from was given: up to now. */
  toNow: boolean;
}

/** The range the chart counts: the table's dates, or the last week up to now. Null when a date does not parse (the table says why). */
export function chartRange(values: FilterValues, now = Date.now()): ChartRange | null {
  const to = values.date_to ? Date.parse(values.date_to) : now;
  const from = values.date_from ? Date.parse(values.date_from) : to - CHART_DAYS * DAY_MS;
  if (!Number.isFinite(from) || !Number.isFinite(to) || from > to) return null;
  return { from: new Date(from).toISOString(), to: new Date(to).toISOString(), recent: !values.date_from && !values.date_to, toNow: !values.date_to };
}

export interface ChartSeries {
  label: string;
  total: number;
  counts: number[];
  /** The sum of every action not drawn on its own. */
  other?: boolean;
}

export interface Chart {
  /** rollups: the ledger's hourly (or daily) counts; sample: counted here from the matching events themselves. */
  source: "rollups" | "sample";
  unit: "hour" | "day";
  /** Start of the first bucket. */
  start: string;
  series: ChartSeries[];
  total: number;
  /** sample: more events match than were counted (the chart then starts at the oldest counted one). */
  more: boolean;
  /** sample, more: the oldest event counted. */
  countedFrom: string | null;
  /** sample: the most events it counts. */
  bound: number;
}

/** GET /v1/stats/activity's answer. */
export type Activity = z.infer<typeof activitySchema>["data"];

const listOf = (v: string | undefined) => (v ? [...new Set(v.split(",").map((a) => a.trim()).filter(Boolean))] : []);
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** The rollups count by action and hour only: a search, organization, actor or address filter needs the events themselves. */
export const rollupsCanAnswer = (values: FilterValues) => !values.q && !values.organization && !values.actor_id && !values.ip_address;

/**
 * The chart from the rollups, with the table's action filters applied; null
 * when they cannot say: an action the filters name is summed into "other"
 * (not among the range's busiest) while "other" is not empty.
 */
export function fromRollups(a: Activity, values: FilterValues): Chart | null {
  const known = new Map(a.series.map((s) => [s.action, s]));
  // An action outside the busiest counts zero only when "other" holds nothing.
  const unknownIsZero = a.other.every((n) => n === 0);
  const exclude = new Set(listOf(values.actions_exclude));
  let include: string[] | null = values.action ? [values.action] : null;
  if (values.actions) include = include ? include.filter((x) => listOf(values.actions).includes(x)) : listOf(values.actions);
  let series: ChartSeries[];
  if (include) {
    const names = include.filter((x) => !exclude.has(x));
    if (!unknownIsZero && names.some((x) => !known.has(x))) return null;
    series = names.flatMap((x) => (known.has(x) ? [{ label: x, total: known.get(x)!.total, counts: known.get(x)!.counts }] : []));
  } else {
    if (!unknownIsZero && [...exclude].some((x) => !known.has(x))) return null;
    series = a.series.filter((s) => !exclude.has(s.action)).map((s) => ({ label: s.action, total: s.total, counts: s.counts }));
    const other = sum(a.other);
    if (other > 0) series.push({ label: "other actions", total: other, counts: a.other, other: true });
  }
  series = series.filter((s) => s.total > 0).sort((x, y) => (x.other ? 1 : y.other ? -1 : y.total - x.total));
  return { source: "rollups", unit: a.bucket, start: a.starts[0] ?? a.from, series, total: sum(series.map((s) => s.total)), more: false, countedFrom: null, bound: 0 };
}

/**
 * The chart counted from matching events (newest first, as the list answers).
 * `more`: the list had more; the chart then starts at the oldest event counted,
 * so no bucket it draws is missing events it did not read.
 */
export function fromEvents(events: { action: string; occurred_at: string }[], range: ChartRange, more: boolean, bound = CHART_MAX_EVENTS): Chart {
  const times = events.map((e) => Date.parse(e.occurred_at));
  const oldest = times.length > 0 ? Math.min(...times) : Date.parse(range.from);
  let from = more ? oldest : Date.parse(range.from);
  const to = Date.parse(range.to);
  const unit = to - from <= HOURLY_UP_TO_MS ? "hour" : "day";
  const size = unit === "hour" ? HOUR_MS : DAY_MS;
  // A range longer than the chart draws starts at the oldest event instead.
  if (Math.floor(to / size) - Math.floor(from / size) + 1 > MAX_BUCKETS) from = oldest;
  const first = Math.floor(from / size);
  const n = Math.max(1, Math.min(MAX_BUCKETS, Math.floor(to / size) - first + 1));
  const byAction = new Map<string, number[]>();
  events.forEach((e, i) => {
    const b = Math.floor(times[i] / size) - first;
    if (!(b >= 0 && b < n)) return;
    const counts = byAction.get(e.action) ?? byAction.set(e.action, new Array(n).fill(0)).get(e.action)!;
    counts[b]++;
  });
  const ranked = [...byAction].map(([label, counts]) => ({ label, counts, total: sum(counts) })).sort((x, y) => y.total - x.total || (x.label < y.label ? -1 : 1));
  const series: ChartSeries[] = ranked.slice(0, TOP_ACTIONS);
  if (ranked.length > TOP_ACTIONS) {
    const other = new Array(n).fill(0);
    for (const s of ranked.slice(TOP_ACTIONS)) s.counts.forEach((c, i) => (other[i] += c));
    series.push({ label: "other actions", total: sum(other), counts: other, other: true });
  }
  return {
    source: "sample",
    unit,
    start: new Date(first * size).toISOString(),
    series,
    total: sum(series.map((s) => s.total)),
    more,
    countedFrom: more && times.length > 0 ? new Date(oldest).toISOString() : null,
    bound,
  };
}

/** The chart's colour for a series: the busiest actions in order, "other actions" always grey (console.css .c0 to .c6). */
const colourOf = (s: ChartSeries, i: number) => `c${s.other ? 6 : i % 6}`;

function RangeWords(props: { range: ChartRange }) {
  const r = props.range;
  if (r.recent) return <>in the last {plural(CHART_DAYS, "day")}</>;
  if (r.toNow) return <>since <When at={r.from} /></>;
  return (
    <>
      between <When at={r.from} /> and <When at={r.to} />
    </>
  );
}

/**
 * The chart's caption: how many events match in its range, the project's
 * total beside it (so a difference says why: the range), and where the counts
 * come from.
 */
export function ChartCaption(props: { chart: Chart; range: ChartRange; filtered: boolean; projectTotal: number | null }) {
  const { chart, range } = props;
  const noun = props.filtered ? ["matching event", "matching events"] : ["event", "events"];
  const count = chart.more ? `At least ${plural(chart.total, noun[0], noun[1])}` : chart.total === 0 ? `No ${noun[1]}` : plural(chart.total, noun[0], noun[1]);
  return (
    <>
      <span class="chart-total">
        <strong id="activity-total">{count}</strong> <RangeWords range={range} />
        {props.projectTotal !== null ? `; ${countText(props.projectTotal)} recorded in the project in all` : ""}.
      </span>{" "}
      <span class="chart-source" id="activity-source">
        {chart.source === "rollups" ? (
          <>
            Counts from {chart.unit === "hour" ? "hourly" : "daily"} rollups, by time of occurrence (UTC); events since purged still count.
          </>
        ) : chart.more ? (
          <>
            Counted from the first {countText(chart.bound)} matching events, newest first: the chart starts at the oldest of them,{" "}
            <When at={chart.countedFrom} />; older ones match too.
          </>
        ) : (
          <>Counted from the matching events themselves: the hourly rollups count by action only.</>
        )}
      </span>
    </>
  );
}

/** The chart: caption, a legend of its series (buttons that show one series alone), the plot events.js draws. */
function ActivityChart(props: { chart: Chart | null; error: ApiError | null; range: ChartRange | null; filtered: boolean; projectTotal: number | null; zoomOut: string | null }) {
  const { chart, range } = props;
  const data = chart ? JSON.stringify({ unit: chart.unit, start: chart.start, total: chart.total, series: chart.series.map((s, i) => ({ label: s.label, counts: s.counts, colour: colourOf(s, i) })) }) : "";
  return (
    <figure class="chart" id="activity" aria-labelledby="activity-caption" data-chart={data}>
      <figcaption id="activity-caption">
        {chart && range ? (
          <ChartCaption chart={chart} range={range} filtered={props.filtered} projectTotal={props.projectTotal} />
        ) : (
          <span>The chart is unavailable{props.error ? `: ${props.error.message}` : " for these dates"}.</span>
        )}{" "}
        {props.zoomOut ? <a href={props.zoomOut}>Show the last {plural(CHART_DAYS, "day")}</a> : null}
      </figcaption>
      {chart && chart.series.length > 0 ? (
        <>
          <ul class="legend" id="activity-legend" aria-label="Actions in the chart" aria-describedby="legend-hint">
            {chart.series.map((s, i) => (
              <li>
                <button type="button" class="series" data-series={String(i)} aria-pressed="false">
                  <span class={`swatch ${colourOf(s, i)}`} aria-hidden="true"></span>
                  <span class="name">{s.label}</span> <span class="n">{countText(s.total)}</span>
                </button>
              </li>
            ))}
          </ul>
          <p id="legend-hint" class="sr-only">
            Select an action to show only its bars; select it again to show every action.
          </p>
          <div id="activity-plot" class="plot"></div>
          <div class="chart-foot">
            <p id="activity-status" class="muted" role="status">
              Drawing the chart…
            </p>
            <p id="activity-hover" class="hover muted" aria-hidden="true"></p>
          </div>
        </>
      ) : null}
    </figure>
  );
}

function ActorCell(props: { actor: EventRow["actor"] }) {
  const a = props.actor;
  if (!a) return null;
  if (!a.id) return <>{a.name ?? <em>(erased)</em>}</>;
  return (
    <>
      <a href={actorHref(a.id)} class="id">
        {a.name ?? a.id}
      </a>
      {a.name ? <span class="muted id"> ({a.id})</span> : null}
    </>
  );
}

export function TargetList(props: { targets: EventRow["targets"] }) {
  if (props.targets.length === 0) return null;
  return (
    <ul class="plain targets">
      {props.targets.map((t) => (
        <li>
          {t.type ?? "?"}:{" "}
          {t.type && t.id ? (
            <a href={targetHref(t.type, t.id)} class="id">
              {t.name ?? t.id}
            </a>
          ) : (
            <span class="id">{t.name ?? t.id ?? "?"}</span>
          )}
        </li>
      ))}
    </ul>
  );
}

/** The filters, behind one control: on a small screen the first event shows without scrolling past ten fields (events.js opens it on wide ones). */
function FilterForm(props: { values: FilterValues }) {
  const { values } = props;
  const active = activeFilters(values);
  return (
    <details class="filter-box" id="filters">
      <summary>
        Filters <span class="muted">({active.length === 0 ? "none active" : `${active.length} active: ${active.map((f) => LABELS[f].short).join(", ")}`})</span>
      </summary>
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
          {active.length > 0 ? <a href="/console/events">Clear</a> : null}
        </div>
      </form>
    </details>
  );
}

export function EventsPage(props: {
  viewer: Viewer;
  values: FilterValues;
  rows: EventRow[];
  nextCursor: string | null;
  hotSince: string | null;
  error: ApiError | null;
  chart?: { chart: Chart | null; error: ApiError | null; range: ChartRange | null; projectTotal: number | null };
}) {
  const { values, rows } = props;
  const base = Object.fromEntries(FILTERS.map((f) => [f, values[f]]));
  const filtered = activeFilters(values).some((f) => f !== "date_from" && f !== "date_to");
  const chart = props.chart ?? { chart: null, error: null, range: null, projectTotal: null };
  const zoomOut = values.date_from || values.date_to ? `/console/events${queryOf({ ...base, date_from: undefined, date_to: undefined, cursor: undefined })}` : null;
  return (
    <Page title="Events" viewer={props.viewer} active="events" script="events.js" styles={["uplot.min.css"]}>
      <h1>Events</h1>
      <FilterForm values={values} />
      <ActivityChart chart={chart.chart} error={chart.error} range={chart.range} filtered={filtered} projectTotal={chart.projectTotal} zoomOut={zoomOut} />
      <ApiProblem error={props.error} />
      {props.hotSince ? (
        <p class="muted">
          Events received before <When at={props.hotSince} /> are archived: the list and search cover newer events; open, export and verify cover all.
        </p>
      ) : null}
      <TableBox label="Events" cards>
        <table class="events">
          <caption>
            {rows.length === 0 ? "No events match." : `${plural(rows.length, "event")}${values.cursor ? " (a later page)" : ""}, newest first`}
          </caption>
          <thead>
            <tr>
              <th scope="col">Occurred</th>
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
                <td data-label="Occurred" class="when">
                  <When at={e.occurred_at} />
                </td>
                <td data-label="Action">
                  <a href={`/console/events/${encodeURIComponent(e.id)}`} class="action">
                    {e.action}
                  </a>
                  {e.display ? <span class="sentence">{e.display}</span> : null}
                </td>
                <td data-label="Actor">
                  <ActorCell actor={e.actor} />
                </td>
                <td data-label="Targets">
                  <TargetList targets={e.targets} />
                </td>
                <td data-label="Organization">
                  <OrganizationLink id={e.organization} />
                </td>
                <td class="num" data-label="Seq">
                  {e.seq}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableBox>
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
