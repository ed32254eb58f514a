// Issue 24 benchmark: the console's events page (server time: the session check, the
// in-process GET /v1/events, the HTML) and the activity chart's data call
// (GET /v1/stats/activity, read from the ledger's rollups) on the large project,
// p50/p95 against the same rounds' floors: the no-op worker and an authenticated
// read that finds nothing. Goal: the chart's data under 100 ms at p95.
import { fmt, httpGet, latencies } from "./lib.mjs";

const ITERATIONS = Number(process.env.BENCH_CONSOLE_ITERATIONS ?? 200);
const IP = "127.0.0.11";

/** A console session for the key: the cookie the sign-in form sets. */
async function signIn(url, key) {
  const res = await fetch(`${url}/console/sign-in`, {
    method: "POST",
    redirect: "manual",
    headers: { Origin: url, "Content-Type": "application/x-www-form-urlencoded", "CF-Connecting-IP": IP },
    body: new URLSearchParams({ api_key: key }),
  });
  const cookie = res.headers.get("set-cookie")?.split(";")[0];
  if (res.status !== 303 || !cookie) throw new Error(`console sign-in answered ${res.status}: ${await res.text()}`);
  return cookie;
}

export default async function consoleBench({ url, runtimeUrl, baselineUrl, baselineRuntimeUrl, key, total, report }) {
  const api = { Authorization: `Bearer ${key}`, "CF-Connecting-IP": IP };
  const browser = { Cookie: await signIn(url, key), "CF-Connecting-IP": IP };
  const ok = (path, headers, status = 200) => async (base) => {
    const res = await httpGet(`${base}${path}`, headers);
    if (res.status !== status) throw new Error(`GET ${path} answered ${res.status}: ${String(res.body).slice(0, 300)}`);
    return res.body;
  };
  // sampleEvent's events span 2025-11-15 to 2026-11-15: the ranges are inside it, not "the last week".
  const week = "from=2026-05-01T00:00:00.000Z&to=2026-05-07T23:59:59.999Z";
  const year = "from=2025-11-15T00:00:00.000Z&to=2026-11-14T23:59:59.999Z&bucket=day";
  const widest = "from=2026-03-01T00:00:00.000Z&to=2026-05-23T07:59:59.999Z&bucket=hour";
  const cases = [
    ["floor: GET /v1/events/<unknown id>", ok("/v1/events/00000000-0000-0000-0000-000000000000", api, 404), false],
    ["events page: GET /console/events (50 rows, HTML)", ok("/console/events", browser), false],
    ["events page, filtered: ?organization=org_7&action=document.shared", ok("/console/events?organization=org_7&action=document.shared", browser), false],
    ["chart data: /v1/stats/activity, a week by hour (168 buckets)", ok(`/v1/stats/activity?${week}`, api), true],
    ["chart data: a year by day (365 buckets)", ok(`/v1/stats/activity?${year}`, api), true],
    ["chart data: 2,000 hours (the most one call answers)", ok(`/v1/stats/activity?${widest}`, api), true],
    ["chart data as the page calls it: /console/api/v1/stats/activity, a year by day", ok(`/console/api/v1/stats/activity?${year}`, browser), true],
  ];
  const counted = JSON.parse(await ok(`/v1/stats/activity?${year}`, api)(url)).data.total;
  const bases = [
    { name: "through wrangler dev's proxy", url, baseline: baselineUrl },
    { name: "at the runtime (no dev proxy)", url: runtimeUrl, baseline: baselineRuntimeUrl },
  ];
  const fns = [];
  for (const base of bases) {
    if (base.baseline) fns.push(() => httpGet(`${base.baseline}/nothing`));
    for (const [, fn] of cases) fns.push(() => fn(base.url));
  }
  const results = await latencies(fns, ITERATIONS);
  let at = 0;
  for (const base of bases) {
    const rows = [];
    if (base.baseline) {
      const r = results[at++];
      rows.push(["baseline worker, no-op GET", `p50 ${fmt.ms(r.p50)}, p95 ${fmt.ms(r.p95)}`]);
    }
    let worstChart = 0;
    for (const [label, , chart] of cases) {
      const r = results[at++];
      if (chart) worstChart = Math.max(worstChart, r.p95);
      rows.push([label, `p50 ${fmt.ms(r.p50)}, p95 ${fmt.ms(r.p95)}`]);
    }
    rows.push(["worst chart-data p95 (goal < 100 ms)", `${fmt.ms(worstChart)} ${worstChart < 100 ? "(met)" : "(NOT met)"}`]);
    report(`Console, ${total.toLocaleString("en-US")} events (${counted.toLocaleString("en-US")} in the rollups' year), ${ITERATIONS} rounds, ${base.name}`, rows);
  }
}
