// Issue 3 benchmark: list and search latency, export throughput and the worker's memory during exports.
// Runs against a project loaded with sampleEvent() (see lib.mjs): 6 common actions, 50 organizations,
// 5,000 actors, occurred_at spread over 2026, and every 10,000th event rare ("security.key.rotated", "Zebulon").
// Loaded with BENCH_READS_LIVE=1, the events carry no occurred_at (readTimes).
import { countLines, fmt, httpGet, latencies, readTimes, sampleHeap, sampleRss } from "./lib.mjs";

const ITERATIONS = Number(process.env.BENCH_READ_ITERATIONS ?? 200);
// BENCH_READS_ONLY=search (or lists): the search and abuse cases (or the list cases) alone, a few minutes, not a quarter of an hour, to compare a change to them.
const SEARCH_ONLY = process.env.BENCH_READS_ONLY === "search";
const LISTS_ONLY = process.env.BENCH_READS_ONLY === "lists";
if (![undefined, "search", "lists"].includes(process.env.BENCH_READS_ONLY)) throw new Error(`BENCH_READS_ONLY=${process.env.BENCH_READS_ONLY}: only "search" and "lists" are known`);

export default async function readsBench({ url, runtimeUrl, baselineUrl, baselineRuntimeUrl, key, total, witness, processes, inspectorPort, report, layout }) {
  const times = readTimes(layout);
  const range = `date_from=${times.from}&date_to=${times.to}`;
  const headers = { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "127.0.0.9" };
  // Every read is timed twice in the same rounds: through wrangler dev's proxy, as
  // `npm run dev` serves it, and at the runtime's own socket, as a deployed worker
  // answers it (no proxy hop). Both are reported.
  const bases = [
    { name: "through wrangler dev's proxy", url, baseline: baselineUrl },
    { name: "at the runtime (no dev proxy)", url: runtimeUrl, baseline: baselineRuntimeUrl },
  ];
  /** The whole answer of a GET that must succeed; timed requests stop the clock once the body is in. */
  async function get(base, path) {
    const res = await httpGet(`${base}${path}`, headers);
    if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${res.body}`);
    return res.body;
  }
  const page = async (path) => JSON.parse(await get(url, path));

  /** A cursor in the middle of the filtered events (mid-year, or mid-March for the March range): deep in the index. */
  async function deepCursor(path, query) {
    const sep = query ? "&" : "?";
    const middle = query.includes(range) ? times.rangeMiddle : times.middle;
    const { data } = await page(`${path}${query}${sep}limit=1&cursor=${middle}`);
    // A query that matches nothing (the abuse case) starts its deep page at the bare instant.
    if (data.length === 0 && query.includes("q=us%20ac")) return middle;
    if (data.length === 0) throw new Error(`no events below mid-year for ${path}${query}`);
    return `${data[0].occurred_at}~${data[0].seq}`;
  }

  /**
   * Each case's first page and a deep cursor page on both bases, all measured
   * together in rounds (see latencies()); extra(base) adds requests of the
   * same rounds. Returns, per base, the extra results and each case's.
   */
  async function measureAll(path, cases, extra = () => []) {
    const requests = [];
    const slots = bases.map(() => ({ extra: [], cases: [] }));
    const add = (fn) => requests.push(fn) - 1;
    bases.forEach((base, b) => {
      slots[b].extra = extra(base).map(([label, fn]) => ({ label, at: add(fn) }));
    });
    for (const [label, query] of cases) {
      const sep = query ? "&" : "?";
      const cursor = encodeURIComponent(await deepCursor(path, query));
      bases.forEach((base, b) => {
        const first = add(() => get(base.url, `${path}${query}`));
        const deep = add(() => get(base.url, `${path}${query}${sep}cursor=${cursor}`));
        slots[b].cases.push({ label, first, deep });
      });
    }
    const results = await latencies(requests, ITERATIONS);
    return slots.map((slot) => ({
      extra: slot.extra.map(({ label, at }) => ({ label, ...results[at] })),
      cases: slot.cases.map(({ label, first, deep }) => ({ label, first: results[first], deep: results[deep] })),
    }));
  }

  const pair = (first, deep) =>
    `first page p50 ${fmt.ms(first.p50)} / p95 ${fmt.ms(first.p95)}; deep cursor p50 ${fmt.ms(deep.p50)} / p95 ${fmt.ms(deep.p95)}`;

  /** One table per base: the extra rows, every case, and the worst p95 against the target. */
  function reportCases(title, measured, target) {
    measured.forEach(({ extra, cases }, b) => {
      const rows = extra.map(({ label, p50, p95 }) => [label, `p50 ${fmt.ms(p50)}, p95 ${fmt.ms(p95)}`]);
      let worst = 0;
      let under = 0;
      for (const { label, first, deep } of cases) {
        worst = Math.max(worst, first.p95, deep.p95);
        under += (first.p95 < target) + (deep.p95 < target);
        rows.push([label, pair(first, deep)]);
      }
      rows.push([`worst p95 (target < ${target} ms)`, `${fmt.ms(worst)} (${under} of ${2 * cases.length} under ${target} ms)`]);
      report(`${title}, ${bases[b].name}`, rows);
    });
  }

  const listCases = [
    ["no filter", ""],
    ["organization (1 in 50)", "?organization=org_7"],
    ["actor_id (1 in 5,000)", "?actor_id=user_42"],
    ["action (1 in 6)", "?action=document.shared"],
    ["action (1 in 10,000)", "?action=security.key.rotated"],
    ["actions (2 common + 1 rare)", "?actions=document.shared,member.invited,security.key.rotated"],
    ["actions_exclude (2 of 6)", "?actions_exclude=user.login.succeeded,user.login.failed"],
    ["ip_address (98.9% of events)", "?ip_address=127.0.0.2"],
    ["ip_address (1 request in 100)", "?ip_address=127.0.0.11"],
    ["ip_address (1 request in 1,000)", "?ip_address=127.0.0.12"],
    ["date range (one month)", `?${range}`],
    ["organization + action + month", `?organization=org_8&action=document.shared&${range}`],
    ["target_type (every event)", "?target_type=document"],
    ["target_type + target_id (1 in 20,000)", "?target_type=document&target_id=doc_42"],
  ];
  // The runtime's own floor (the no-op worker on the same path) and what every authenticated
  // read pays before its own query (routing, the rate limiter, the key check), in the same rounds.
  const floors = (base) => [
    ...(base.baseline ? [["baseline worker, no-op GET", () => httpGet(`${base.baseline}/nothing`)]] : []),
    ["floor: GET /v1/events/<unknown id>", () => httpGet(`${base.url}/v1/events/00000000-0000-0000-0000-000000000000`, headers)],
  ];
  // The floors stay in the search-only run: its rounds are compared with another run's by them.
  const lists = await measureAll("/v1/events", SEARCH_ONLY ? [] : listCases, floors);
  reportCases(`List, limit 50, ${total.toLocaleString("en-US")} events in the project (${ITERATIONS} rounds of every request)`, lists, 20);
  if (LISTS_ONLY) return;

  const searchCases = [
    ["common: 'login' (1 in 3)", "?q=login"],
    ["common: 'user' (every event)", "?q=user"],
    ["common + filter: 'acme' in org_7", "?q=acme&organization=org_7"],
    ["rare: 'zebulon' (1 in 10,000)", "?q=zebulon"],
    ["rare: 'security rotated' (1 in 10,000)", "?q=security%20rotated"],
  ];
  reportCases(`Search, limit 50 (${ITERATIONS} rounds of every request)`, await measureAll("/v1/events/search", searchCases), 50);
  // Issue 12: eight common two-letter terms, each in a third or more of the events, together in none:
  // the worst a term list can make a search do once short terms are ignored and more than 8 refused.
  const abuseCases = [["8 common two-letter terms (no event has all)", "?q=us%20ac%20te%20lo%20do%20sh%20me%20in"]];
  reportCases(`Search abuse, limit 50 (${ITERATIONS} rounds)`, await measureAll("/v1/events/search", abuseCases), 100);
  if (SEARCH_ONLY) return;

  /** Streams an export, counting rows without keeping it; samples the Worker's heap and the runtime's and proxy's RSS meanwhile. */
  async function exportRun(query, pids, base = url) {
    const heap = await sampleHeap(inspectorPort);
    const runtime = pids.runtime ? sampleRss(pids.runtime) : null;
    const proxy = pids.proxy ? sampleRss(pids.proxy) : null;
    const started = performance.now();
    const res = await fetch(`${base}/v1/exports?format=csv${query}`, { headers });
    if (res.status !== 200) throw new Error(`export answered ${res.status}: ${await res.text()}`);
    const { lines, bytes } = await countLines(res.body);
    const seconds = (performance.now() - started) / 1000;
    return {
      rows: lines - 1,
      bytes,
      seconds,
      heapBeforeMiB: heap.beforeMiB,
      heapMiB: await heap.stop(),
      runtimeMiB: runtime ? runtime.stop() : NaN,
      proxyMiB: proxy ? proxy.stop() : NaN,
    };
  }

  const pids = processes();
  const idle = pids.runtime ? sampleRss(pids.runtime).stop() : NaN;
  // The runtime's heap grows on the first big export and then stays (lazy GC in every isolate
  // of the process, D1's and R2's included); warm it up so the two measured runs compare like for like.
  const warmup = await exportRun(`&${range}`, pids);
  const small = await exportRun("&organization=org_7", pids);
  const full = await exportRun("", pids);
  const fullAtRuntime = await exportRun("", pids, runtimeUrl);
  // Every event: the bench's and the cron's witness.key.created records of its keys (run.mjs).
  for (const run of [full, fullAtRuntime]) if (run.rows !== total + witness) throw new Error(`full export has ${run.rows} rows, expected ${total} + ${witness} witness.*`);
  const mib = (v) => `${v.toFixed(0)} MiB`;
  const memory = (run) =>
    `Worker heap ${mib(run.heapBeforeMiB)} -> peak ${mib(run.heapMiB)}; workerd peak RSS ${mib(run.runtimeMiB)} (dev proxy ${mib(run.proxyMiB)})`;
  report("Export, CSV, streamed through R2 staging", [
    [`small: organization filter (${small.rows.toLocaleString("en-US")} rows)`, `${fmt.rate(small.rows / small.seconds, "rows/s")}, ${memory(small)}`],
    [`full project (${full.rows.toLocaleString("en-US")} rows, ${(full.bytes / 2 ** 20).toFixed(0)} MiB)`, `${fmt.rate(full.rows / full.seconds, "rows/s")} (target >= 50,000), ${memory(full)}`],
    ["the same, at the runtime (no dev proxy)", `${fmt.rate(fullAtRuntime.rows / fullAtRuntime.seconds, "rows/s")} (target >= 50,000), ${memory(fullAtRuntime)}`],
    ["workerd (runtime) RSS before the exports / after a one-month warm-up export", `${mib(idle)} / ${mib(warmup.runtimeMiB)}`],
    [
      "peak, full minus small export",
      `Worker heap ${mib(full.heapMiB - small.heapMiB)}, runtime RSS ${mib(full.runtimeMiB - small.runtimeMiB)}, for ${(full.rows / Math.max(1, small.rows)).toFixed(0)}x the rows`,
    ],
  ]);
}
