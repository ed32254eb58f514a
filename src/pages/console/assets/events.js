// The events page's activity chart, drawn with uPlot from the counts the
// server put in the figure (data-chart: what the table's question matches,
// per hour or day). It picks the bar width the screen can show (hour, 6 hours,
// day or week), its legend's buttons show one action alone, and dragging
// across it narrows the table (and the chart) to that time range.
import uPlot from "uplot";

const COLOURS = { c0: "#1a56b8", c1: "#d9480f", c2: "#2b8a3e", c3: "#862e9c", c4: "#c92a2a", c5: "#0b7285", c6: "#6c757d" };
const HOUR = 3600;
/** The least room a bar gets, in CSS pixels: narrower and the chart turns into a comb. */
const MIN_PITCH = 14;
/** Buckets the chart may draw, in hours, for hourly and daily counts; weeks start on Monday (UTC). */
const STEPS = {
  hour: [
    { hours: 1, words: "hour" },
    { hours: 6, words: "6 hours" },
    { hours: 24, words: "day" },
    { hours: 168, words: "week" },
  ],
  day: [
    { hours: 24, words: "day" },
    { hours: 168, words: "week" },
  ],
};

const figure = document.getElementById("activity");
const plot = document.getElementById("activity-plot");
const status = document.getElementById("activity-status");
const hover = document.getElementById("activity-hover");
const filters = document.getElementById("filters");

// The filters start folded (small screens see the first event at once); a wide screen has room for them open.
if (filters && matchMedia("(min-width: 60em)").matches) filters.open = true;

const plural = (n, one, many = `${one}s`) => `${String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",")} ${n === 1 ? one : many}`;
const stamp = (seconds) => new Date(seconds * 1000).toISOString().slice(0, 16).replace("T", " ");

function zoomTo(fromSeconds, toSeconds) {
  const url = new URL(location.href);
  url.searchParams.set("date_from", new Date(fromSeconds * 1000).toISOString());
  url.searchParams.set("date_to", new Date(toSeconds * 1000).toISOString());
  url.searchParams.delete("cursor");
  location.assign(url);
}

/** The counts regrouped into the widest bars that still fit `width`: each bar's start (seconds) and each series' count per bar. */
function regroup(data, width) {
  const unitHours = data.unit === "hour" ? 1 : 24;
  const n = data.series[0].counts.length;
  const steps = STEPS[data.unit];
  const step = steps.find((s) => Math.ceil((n * unitHours) / s.hours) <= width / MIN_PITCH) ?? steps[steps.length - 1];
  const per = step.hours / unitHours;
  const firstHour = Math.round(Date.parse(data.start) / 1000 / HOUR);
  // Weeks start on Monday: the epoch began on a Thursday, 72 hours after one.
  const shift = step.hours === 168 ? 72 : 0;
  const groupOf = (i) => Math.floor((firstHour + i * unitHours + shift) / step.hours);
  const first = groupOf(0);
  const groups = groupOf(n - 1) - first + 1;
  const starts = Array.from({ length: groups }, (_, g) => ((first + g) * step.hours - shift) * HOUR);
  const series = data.series.map((s) => {
    const counts = new Array(groups).fill(0);
    s.counts.forEach((c, i) => (counts[groupOf(i) - first] += c));
    return { ...s, counts, total: s.counts.reduce((a, b) => a + b, 0) };
  });
  return { step, per, starts, series };
}

/** Axis ticks in 24-hour UTC: the time, with the date under it where the day changes ("11-22"); dates alone for ticks a day or more apart. */
function tickLabels(u, splits, axis, space, increment) {
  return splits.map((s, i) => {
    const iso = new Date(s * 1000).toISOString();
    const day = iso.slice(5, 10);
    if (increment >= 86400) return i === 0 || iso.slice(0, 4) !== new Date(splits[i - 1] * 1000).toISOString().slice(0, 4) ? `${day}\n${iso.slice(0, 4)}` : day;
    const time = iso.slice(11, 16);
    return i > 0 && new Date(splits[i - 1] * 1000).toISOString().slice(5, 10) === day ? time : `${time}\n${day}`;
  });
}

let chart = null;
let isolated = null;

function draw() {
  const data = JSON.parse(figure.dataset.chart);
  const width = Math.max(plot.clientWidth, 200);
  const height = width < 500 ? 150 : 220;
  const g = regroup(data, width);
  const shown = g.series.map((s, i) => isolated === null || isolated === i);
  // Stacked bars: each shown series drawn as the running total up to it, the tallest (last) first, so each keeps its own band.
  let running = g.starts.map(() => 0);
  const stacked = g.series.map((s, i) => (shown[i] ? (running = running.map((v, j) => v + s.counts[j])) : null));
  const order = g.series.map((_, i) => i).reverse();
  const half = (g.step.hours * HOUR) / 2;
  const xs = g.starts.map((s) => s + half);
  const bars = uPlot.paths.bars({ size: [0.9, 64] });
  chart?.destroy();
  chart = new uPlot(
    {
      width,
      height,
      legend: { show: false },
      series: [
        {},
        ...order.map((i) => ({
          label: g.series[i].label,
          show: shown[i],
          fill: COLOURS[g.series[i].colour],
          stroke: COLOURS[g.series[i].colour],
          width: 0,
          paths: bars,
          points: { show: false },
        })),
      ],
      scales: { x: { time: true, range: () => [g.starts[0], g.starts[g.starts.length - 1] + 2 * half] }, y: { range: (u, min, max) => [0, Math.max(1, max)] } },
      // Axis labels in UTC, whatever the browser's zone.
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
      axes: [{ values: tickLabels, size: 46 }, { label: "events", size: 50 }],
      cursor: { drag: { x: true, y: false, setScale: false }, points: { show: false } },
      hooks: {
        setSelect: [
          (u) => {
            if (u.select.width < 4) return;
            zoomTo(u.posToVal(u.select.left, "x"), u.posToVal(u.select.left + u.select.width, "x"));
          },
        ],
        setCursor: [
          (u) => {
            const i = u.cursor.idx;
            if (i == null) return void (hover.textContent = "");
            const parts = g.series.flatMap((s, k) => (shown[k] && s.counts[i] > 0 ? [`${s.label} ${s.counts[i]}`] : []));
            const total = g.series.reduce((a, s, k) => a + (shown[k] ? s.counts[i] : 0), 0);
            const end = g.starts[i] + g.step.hours * HOUR;
            hover.textContent = `${stamp(g.starts[i])} to ${stamp(end)} UTC: ${plural(total, "event")}${parts.length ? ` (${parts.join(", ")})` : ""}`;
          },
        ],
      },
    },
    [xs, ...order.map((i) => stacked[i] ?? xs.map(() => null))],
    plot,
  );
  const visible = g.series.filter((_, i) => shown[i]);
  const total = visible.reduce((a, s) => a + s.total, 0);
  plot.setAttribute("role", "img");
  plot.setAttribute(
    "aria-label",
    `Bar chart of ${plural(total, "event")}, one bar per ${g.step.words}: ${visible.map((s) => `${s.label} ${s.total}`).join(", ")}`,
  );
  figure.dataset.bucket = g.step.words;
  figure.dataset.shown = visible.map((s) => s.label).join("\n");
  status.textContent = `One bar per ${g.step.words} (UTC)${isolated === null ? "" : `, ${g.series[isolated].label} only`}. Drag across it to zoom.`;
}

function isolate(i) {
  isolated = isolated === i ? null : i;
  for (const b of figure.querySelectorAll("button.series")) b.setAttribute("aria-pressed", String(Number(b.dataset.series) === isolated));
  draw();
}

if (figure && plot && figure.dataset.chart) {
  try {
    draw();
    figure.addEventListener("click", (event) => {
      const button = event.target.closest?.("button.series");
      if (button) isolate(Number(button.dataset.series));
    });
    let width = plot.clientWidth;
    new ResizeObserver(() => {
      if (plot.clientWidth === width) return;
      width = plot.clientWidth;
      requestAnimationFrame(draw);
    }).observe(plot);
  } catch (error) {
    status.textContent = `The chart could not be drawn: ${error.message}`;
  }
}
