// The archive bench's reads of bench-tiered (see archive.bench.mjs): exports of each tier, verify
// over both against the crypto ceiling of verify.bench.mjs, and list latency on the hot part.
import { countOccurrences } from "./archive-helpers.mjs";
import { countLines, fmt, httpGet, latencies } from "./lib.mjs";

const ITERATIONS = Number(process.env.BENCH_READ_ITERATIONS ?? 200);

export async function archiveReads({ url, runtimeUrl, baselineUrl, baselineRuntimeUrl, key, total, cold, witness, coldYear, hotYear, report }) {
  const headers = { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "127.0.0.11" };
  const tiers = {
    archived: { query: `&date_from=${coldYear[0]}&date_to=${coldYear[1]}`, rows: cold },
    hot: { query: `&date_from=${hotYear[0]}&date_to=${hotYear[1]}`, rows: total - cold },
  };

  /** One export streamed to its end; rows counted (CSV: lines after the header; JSON: one project_id key per event). */
  async function exportRun(base, format, tier) {
    const started = performance.now();
    const res = await fetch(`${base}/v1/exports?format=${format}${tiers[tier].query}`, { headers });
    if (res.status !== 200) throw new Error(`${format} export of the ${tier} part answered ${res.status}: ${await res.text()}`);
    const rows = format === "csv" ? (await countLines(res.body)).lines - 1 : (await countOccurrences(res.body, `"project_id":"`)).count;
    const seconds = (performance.now() - started) / 1000;
    if (rows !== tiers[tier].rows) throw new Error(`${format} export of the ${tier} part has ${rows} rows, expected ${tiers[tier].rows}`);
    return rows / seconds;
  }

  // Warm-up: the first exports after a start pay for a cold runtime, cold pages and cold objects.
  await exportRun(runtimeUrl, "csv", "hot");
  await exportRun(runtimeUrl, "json", "archived");
  const exportRows = [];
  const runs = [
    ["csv", runtimeUrl, "at the runtime", 2],
    ["json", runtimeUrl, "at the runtime", 2],
    ["csv", url, "through the dev proxy", 1],
  ];
  for (const [format, base, where, rounds] of runs) {
    // Alternating rounds, best of each: the same statistic on both sides of the ratio.
    let archived = 0;
    let hot = 0;
    for (let i = 0; i < rounds; i++) {
      archived = Math.max(archived, await exportRun(base, format, "archived"));
      hot = Math.max(hot, await exportRun(base, format, "hot"));
    }
    exportRows.push([
      `${format.toUpperCase()}, ${where}${rounds > 1 ? `, best of ${rounds}` : ""}`,
      `archived ${fmt.rate(archived, "rows/s")}, hot ${fmt.rate(hot, "rows/s")}: ${(archived / hot).toFixed(2)}x (target >= 2x)`,
    ]);
  }
  report(`Export of each tier (${cold.toLocaleString("en-US")} archived rows: occurred in 2025; ${(total - cold).toLocaleString("en-US")} hot: 2026)`, exportRows);

  // Verify over both tiers, against verify.bench.mjs's ceiling: SHA-256 + HMAC + leaf hash for as many events.
  // It checks the whole chain: the bench's events and the cron's witness.key.created records of its keys.
  const getJson = async (u, h = {}) => {
    const res = await httpGet(u, h);
    if (res.status !== 200) throw new Error(`${u} answered ${res.status}: ${String(res.body).slice(0, 300)}`);
    return JSON.parse(res.body);
  };
  await getJson(`${baselineUrl}/crypto-loop?n=${Math.min(total, 20_000)}`);
  await getJson(`${url}/v1/events/verify?to=2025-01-02T00:00:00Z`, headers);
  let baseline = 0;
  let seconds = Infinity;
  for (let i = 0; i < 3; i++) {
    let started = performance.now();
    await getJson(`${baselineUrl}/crypto-loop?n=${total}`);
    baseline = Math.max(baseline, total / ((performance.now() - started) / 1000));
    started = performance.now();
    const { data } = await getJson(`${url}/v1/events/verify`, headers);
    if (!data.ok || data.verified !== total + witness) throw new Error(`verify over both tiers did not pass cleanly: ${JSON.stringify(data)}`);
    seconds = Math.min(seconds, (performance.now() - started) / 1000);
  }
  report(`Verify over both tiers (${total.toLocaleString("en-US")} events, one request, through the dev proxy as in verify.bench.mjs)`, [
    ["baseline: SHA-256 + HMAC + leaf hash loop, best of 3", fmt.rate(baseline, "events/s")],
    ["GET /v1/events/verify, best of 3", `${fmt.rate(total / seconds, "events/s")} (${fmt.pct(total / seconds / baseline)} of baseline; target >= 50%), ${seconds.toFixed(1)} s`],
  ]);

  // List on the hot part, at the runtime: first pages and a deep page (a cursor mid-2026) per case.
  const list = async (query) => {
    const res = await httpGet(`${runtimeUrl}/v1/events${query}`, headers);
    if (res.status !== 200) throw new Error(`GET /v1/events${query} answered ${res.status}: ${res.body}`);
    return JSON.parse(res.body);
  };
  const first = await list("");
  if (first.data.length !== 50) throw new Error(`the first page holds ${first.data.length} events, expected 50`);
  const cases = [
    ["no filter", ""],
    ["action (1 in 6)", "?action=document.shared"],
    ["organization (1 in 50)", "?organization=org_7"],
    ["actor_id (1 in 5,000)", "?actor_id=user_42"],
  ];
  // Floors in the same rounds: the no-op worker, and what every authenticated read pays before its query.
  const requests = [() => httpGet(`${baselineRuntimeUrl}/nothing`), () => httpGet(`${runtimeUrl}/v1/events/00000000-0000-0000-0000-000000000000`, headers)];
  for (const [, query] of cases) {
    const sep = query ? "&" : "?";
    const { data } = await list(`${query}${sep}limit=1&cursor=2026-06-01T00:00:00.000Z`);
    // A case with no hot event before June (a small project) starts its deep page at the bare instant.
    const cursor = encodeURIComponent(data.length > 0 ? `${data[0].occurred_at}~${data[0].seq}` : "2026-06-01T00:00:00.000Z");
    requests.push(() => httpGet(`${runtimeUrl}/v1/events${query}`, headers), () => httpGet(`${runtimeUrl}/v1/events${query}${sep}cursor=${cursor}`, headers));
  }
  const [noop, floor, ...timed] = await latencies(requests, ITERATIONS);
  const rows = [
    ["baseline worker, no-op GET", `p50 ${fmt.ms(noop.p50)}, p95 ${fmt.ms(noop.p95)}`],
    ["floor: GET /v1/events/<unknown id>", `p50 ${fmt.ms(floor.p50)}, p95 ${fmt.ms(floor.p95)}`],
  ];
  let worst = 0;
  cases.forEach(([label], i) => {
    const [a, b] = [timed[2 * i], timed[2 * i + 1]];
    worst = Math.max(worst, a.p95, b.p95);
    rows.push([label, `first page p50 ${fmt.ms(a.p50)} / p95 ${fmt.ms(a.p95)}; deep cursor p50 ${fmt.ms(b.p50)} / p95 ${fmt.ms(b.p95)}`]);
  });
  rows.push(["worst p95 (target < 20 ms)", fmt.ms(worst)], ["hot_since of the list (oldest hot event, archived ones exist)", String(first.hot_since)]);
  report(`List, limit 50, hot part of ${(total - cold).toLocaleString("en-US")} events, at the runtime (${ITERATIONS} rounds)`, rows);
}
