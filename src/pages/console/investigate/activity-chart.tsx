import { plural, utcText, type InvEvent } from "./investigate-view";

/**
 * Actions over time, drawn on the server as SVG (no script: the chart is
 * there before any script runs, and the CSP's style-src allows no inline
 * style, while SVG geometry is attributes). No rollup counts events per
 * actor, organization or target, so the counts come from a bounded sample
 * of the subject's newest events, and the caption says which.
 */

type Unit = "hour" | "day" | "week" | "month" | "year";

const MAX_BARS = 60;
const TOP = 5;
const COLORS = ["#1a56b8", "#d9480f", "#2b8a3e", "#862e9c", "#c92a2a"];
const OTHER = "#6c757d";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

function floor(t: number, unit: Unit): number {
  const d = new Date(t);
  if (unit === "hour") return t - (t % HOUR);
  if (unit === "day") return t - (t % DAY);
  // Weeks start on Monday (ISO 8601).
  if (unit === "week") return t - (t % DAY) - ((d.getUTCDay() + 6) % 7) * DAY;
  if (unit === "month") return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  return Date.UTC(d.getUTCFullYear(), 0, 1);
}

function next(t: number, unit: Unit): number {
  const d = new Date(t);
  if (unit === "hour") return t + HOUR;
  if (unit === "day") return t + DAY;
  if (unit === "week") return t + 7 * DAY;
  if (unit === "month") return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return Date.UTC(d.getUTCFullYear() + 1, 0, 1);
}

function bucketsOf(oldest: number, newest: number, unit: Unit): number[] {
  const starts: number[] = [];
  for (let t = floor(oldest, unit); t <= newest && starts.length <= MAX_BARS; t = next(t, unit)) starts.push(t);
  return starts;
}

/** How a bucket's start reads: to the hour, the day, or the month. */
function label(t: number, unit: Unit): string {
  const iso = new Date(t).toISOString();
  if (unit === "hour") return `${iso.slice(0, 13).replace("T", " ")}:00`;
  if (unit === "day" || unit === "week") return iso.slice(0, 10);
  if (unit === "month") return iso.slice(0, 7);
  return iso.slice(0, 4);
}

const UNIT_TEXT: Record<Unit, string> = { hour: "hour", day: "day", week: "week (from Monday)", month: "month", year: "year" };

export interface Activity {
  unit: Unit;
  starts: number[];
  layers: { label: string; color: string; counts: number[]; total: number }[];
  totals: number[];
}

/** The events per bucket, stacked by the busiest actions; the smallest unit that fits in MAX_BARS bars. */
export function activityOf(events: InvEvent[]): Activity | null {
  const times = events.map((e) => Date.parse(e.occurred_at)).filter((t) => !Number.isNaN(t));
  if (times.length === 0) return null;
  const oldest = Math.min(...times);
  const newest = Math.max(...times);
  const units: Unit[] = ["hour", "day", "week", "month", "year"];
  const unit = units.find((u) => bucketsOf(oldest, newest, u).length <= MAX_BARS) ?? "year";
  const starts = bucketsOf(oldest, newest, unit);
  const indexOf = (t: number) => {
    const start = floor(t, unit);
    let i = starts.length - 1;
    while (i > 0 && starts[i] > start) i--;
    return i;
  };
  const byAction = new Map<string, number>();
  for (const e of events) byAction.set(e.action, (byAction.get(e.action) ?? 0) + 1);
  const top = [...byAction].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, TOP).map(([a]) => a);
  const layers = top.map((action, i) => ({ label: action, color: COLORS[i], counts: starts.map(() => 0), total: 0 }));
  const other = { label: "other actions", color: OTHER, counts: starts.map(() => 0), total: 0 };
  const totals = starts.map(() => 0);
  for (const e of events) {
    const t = Date.parse(e.occurred_at);
    if (Number.isNaN(t)) continue;
    const i = indexOf(t);
    const layer = layers[top.indexOf(e.action)] ?? other;
    layer.counts[i]++;
    layer.total++;
    totals[i]++;
  }
  return { unit, starts, layers: other.total > 0 ? [...layers, other] : layers, totals };
}

const W = 720;
const H = 180;

function Swatch(props: { color: string }) {
  return (
    <svg class="swatch" width="12" height="12" viewBox="0 0 12 12" aria-hidden="true" focusable="false">
      <rect width="12" height="12" rx="2" fill={props.color} />
    </svg>
  );
}

/**
 * The chart, its legend and the same counts as a table (what a screen reader
 * or a keyboard reads; the bars' titles are for the pointer). `basis` says
 * which events were counted.
 */
export function ActivityChart(props: { activity: Activity; basis: string; idPrefix: string }) {
  const { unit, starts, layers, totals } = props.activity;
  const max = Math.max(1, ...totals);
  const slot = W / starts.length;
  // Like the events page's chart: most of the slot, but never a slab.
  const bar = Math.max(1, Math.min(slot * 0.8, 48));
  const y = (n: number) => (n / max) * (H - 4);
  const sum = totals.reduce((a, b) => a + b, 0);
  const busiest = layers.filter((l) => l.label !== "other actions").slice(0, 3).map((l) => `${l.label} (${l.total})`).join(", ");
  const summary = `Bar chart of ${plural(sum, "event")} per ${unit}, from ${label(starts[0], unit)} to ${label(starts[starts.length - 1], unit)} (UTC); the busiest bar has ${max}${busiest ? `; busiest actions: ${busiest}` : ""}.`;
  return (
    <figure class="chart inv-chart" aria-labelledby={`${props.idPrefix}-caption`}>
      <figcaption id={`${props.idPrefix}-caption`}>
        Events per {UNIT_TEXT[unit]} (UTC), stacked by the {layers.length > 1 ? "busiest actions" : "action"}. {props.basis}
      </figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} width="100%" preserveAspectRatio="none" role="img" aria-label={summary} class="inv-plot">
        <line x1="0" y1={H - 0.5} x2={W} y2={H - 0.5} stroke="#8a94a3" stroke-width="1" />
        <line x1="0" y1="4.5" x2={W} y2="4.5" stroke="#d5d9df" stroke-width="1" stroke-dasharray="4 4" />
        {starts.map((start, i) => {
          let base = H;
          return (
            <g>
              <title>{`${label(start, unit)}: ${plural(totals[i], "event")}`}</title>
              {layers.map((l) => {
                const n = l.counts[i];
                if (n === 0) return null;
                const h = y(n);
                base -= h;
                return (
                  <rect x={(i * slot + (slot - bar) / 2).toFixed(2)} y={base.toFixed(2)} width={bar.toFixed(2)} height={h.toFixed(2)} fill={l.color}>
                    <title>{`${label(start, unit)}: ${plural(n, "event")} ${l.label}`}</title>
                  </rect>
                );
              })}
            </g>
          );
        })}
      </svg>
      <div class="inv-axis" aria-hidden="true">
        <span>{label(starts[0], unit)}</span>
        <span>{`top: ${max} per ${unit}`}</span>
        <span>{label(starts[starts.length - 1], unit)}</span>
      </div>
      <ul class="legend" aria-label="Actions in the chart">
        {layers.map((l) => (
          <li>
            <Swatch color={l.color} /> <span class="legend-label">{l.label}</span> <span class="muted">({l.total.toLocaleString("en-US")})</span>
          </li>
        ))}
      </ul>
      <details>
        <summary>The counts as a table</summary>
        <div class="table-wrap" role="region" tabindex={0} aria-label={`Events per ${unit}, as a table`}>
          <table>
            <caption>{`Events per ${unit} (UTC); ${unit}s without events are left out`}</caption>
            <thead>
              <tr>
                <th scope="col">{`${unit[0].toUpperCase()}${unit.slice(1)} starting`}</th>
                <th scope="col">Events</th>
                {layers.map((l) => (
                  <th scope="col">{l.label}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {starts.map((start, i) =>
                totals[i] === 0 ? null : (
                  <tr>
                    <th scope="row">
                      <time datetime={new Date(start).toISOString()} title={utcText(new Date(start).toISOString())}>
                        {label(start, unit)}
                      </time>
                    </th>
                    <td class="num">{totals[i]}</td>
                    {layers.map((l) => (
                      <td class="num">{l.counts[i]}</td>
                    ))}
                  </tr>
                ),
              )}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
