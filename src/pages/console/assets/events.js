// The events page's activity chart: counts from GET /v1/stats/activity (the
// ledger's rollups), stacked by the busiest actions, drawn with uPlot.
// Dragging across it narrows the table to that time range.
import uPlot from "uplot";

const COLORS = ["#1a56b8", "#d9480f", "#2b8a3e", "#862e9c", "#c92a2a", "#0b7285", "#6c757d"];
const figure = document.getElementById("activity");
const plot = document.getElementById("activity-plot");
const status = document.getElementById("activity-status");

const stamp = (seconds) => new Date(seconds * 1000).toISOString().slice(0, 16).replace("T", " ");

function zoomTo(fromSeconds, toSeconds) {
  const url = new URL(location.href);
  url.searchParams.set("date_from", new Date(fromSeconds * 1000).toISOString());
  url.searchParams.set("date_to", new Date(toSeconds * 1000).toISOString());
  url.searchParams.delete("cursor");
  location.assign(url);
}

function draw(d) {
  const xs = d.starts.map((s) => Date.parse(s) / 1000);
  const layers = d.series.map((s) => ({ label: s.action, counts: s.counts }));
  if (d.other.some((n) => n > 0)) layers.push({ label: "other actions", counts: d.other });
  // Stacked bars: each layer is drawn as the running total up to it, tallest first, so each shows its own band.
  let running = xs.map(() => 0);
  const totals = layers.map((layer) => (running = running.map((v, i) => v + layer.counts[i])));
  const order = layers.map((_, i) => i).reverse();
  const bars = uPlot.paths.bars({ size: [0.85, 48] });
  const series = [
    { label: `Time (UTC, per ${d.bucket})`, value: (u, v) => (v == null ? "" : stamp(v)) },
    ...order.map((i) => ({
      label: layers[i].label,
      fill: COLORS[i % COLORS.length],
      stroke: COLORS[i % COLORS.length],
      width: 0,
      paths: bars,
      points: { show: false },
      value: (u, v, si, idx) => (idx == null ? "" : String(layers[i].counts[idx])),
    })),
  ];
  const chart = new uPlot(
    {
      width: Math.max(plot.clientWidth, 280),
      height: 240,
      series,
      scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max)] } },
      // Axis labels in UTC, as every time on the page, whatever the browser's zone.
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
      axes: [{}, { label: "events" }],
      cursor: { drag: { x: true, y: false, setScale: false } },
      hooks: {
        setSelect: [
          (u) => {
            if (u.select.width < 4) return;
            zoomTo(u.posToVal(u.select.left, "x"), u.posToVal(u.select.left + u.select.width, "x"));
          },
        ],
      },
    },
    [xs, ...order.map((i) => totals[i])],
    plot,
  );
  new ResizeObserver(() => chart.setSize({ width: Math.max(plot.clientWidth, 280), height: 240 })).observe(plot);
  plot.setAttribute("role", "img");
  const busiest = d.series.slice(0, 3).map((s) => `${s.action} (${s.total})`).join(", ");
  plot.setAttribute("aria-label", `Bar chart of ${d.total} events per ${d.bucket}${busiest ? `; busiest actions: ${busiest}` : ""}`);
  status.textContent = `${d.total} events from ${d.from.slice(0, 16).replace("T", " ")} to ${d.to.slice(0, 16).replace("T", " ")} UTC, per ${d.bucket}.`;
}

async function load() {
  const query = new URLSearchParams();
  if (figure.dataset.from) query.set("from", figure.dataset.from);
  if (figure.dataset.to) query.set("to", figure.dataset.to);
  try {
    const res = await fetch(`/console/api/v1/stats/activity?${query}`, { headers: { Accept: "application/json" } });
    const body = await res.json().catch(() => null);
    if (!res.ok) {
      status.textContent = `The chart is unavailable: ${body?.error?.message ?? `HTTP ${res.status}`}`;
      return;
    }
    draw(body.data);
  } catch (error) {
    status.textContent = `The chart is unavailable: ${error.message}`;
  }
}

if (figure) load();
