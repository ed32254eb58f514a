// Issue 37 benchmark: the pull feed (GET /v1/events/feed).
// - Pages of 1,000 through the whole large project (BENCH_EVENTS, hot; and archived too when the
//   archive bench has tiered it): rows/s against a streamed JSON export of the same project in the
//   same run, and the p95 of a page.
// - A collector polling every second while about 1,000 events/s arrive, 10% of them backdated up to
//   a year: every event must arrive exactly once (0 missed, 0 duplicated) and the lag from commit
//   (the UUIDv7 id's time) to the collector is reported.
import { projectShard, tierCounts } from "./archive-helpers.mjs";
import { batchLoad, countLines, createKey, fmt, httpGet, percentile, sampleEvent } from "./lib.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const uuidMs = (id) => parseInt(id.replaceAll("-", "").slice(0, 12), 16);

/** Every event of a project through the feed, 1,000 a page, against a streamed JSON export of it in the same run. */
async function pageThrough(url, headers) {
  const pageTimes = [];
  let rows = 0;
  let cursor = null;
  const started = performance.now();
  for (;;) {
    const t = performance.now();
    const res = await httpGet(`${url}/v1/events/feed?limit=1000${cursor ? `&after=${encodeURIComponent(cursor)}` : ""}`, headers);
    if (res.status !== 200) throw new Error(`feed answered ${res.status}: ${res.body}`);
    const page = JSON.parse(res.body);
    pageTimes.push(performance.now() - t);
    rows += page.data.length;
    cursor = page.nextCursor;
    if (page.at_head) break;
  }
  const feedSeconds = (performance.now() - started) / 1000;
  const exportStarted = performance.now();
  const exported = await fetch(`${url}/v1/exports?format=json`, { headers });
  const { bytes } = await countLines(exported.body);
  const exportSeconds = (performance.now() - exportStarted) / 1000;
  pageTimes.sort((a, b) => a - b);
  return { rows, feedSeconds, exportSeconds, bytes, pageTimes };
}

function pageRows(label, r) {
  return [
    [`feed, pages of 1,000, ${label}`, `${fmt.rate(r.rows / r.feedSeconds, "rows/s")} (${r.rows.toLocaleString("en-US")} rows in ${r.feedSeconds.toFixed(1)} s); page p50 ${fmt.ms(percentile(r.pageTimes, 50))}, p95 ${fmt.ms(percentile(r.pageTimes, 95))}`],
    [`  JSON export of the same project, same run (streamed)`, `${fmt.rate(r.rows / r.exportSeconds, "rows/s")} (${(r.bytes / 2 ** 20).toFixed(0)} MiB in ${r.exportSeconds.toFixed(1)} s): the feed at ${fmt.pct(r.exportSeconds / r.feedSeconds)} of it`],
  ];
}

export default async function feedBench({ runtimeUrl: url, persistDir, key, total, report }) {
  const headers = { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "127.0.0.31" };
  // 1. The whole hot project, 1,000 a page; then the archive bench's tiered project (mostly in R2), when it was loaded.
  const hot = await pageThrough(url, headers);
  let archived = null;
  const tiered = (() => {
    try {
      return tierCounts(persistDir, projectShard(persistDir, "bench-tiered"), "bench-tiered");
    } catch {
      return null;
    }
  })();
  if (tiered && tiered.archived > 0) {
    archived = { counts: tiered, result: await pageThrough(url, { ...headers, Authorization: `Bearer ${createKey(persistDir, "bench-tiered")}` }) };
  }

  // 2. A collector polling every second while events arrive, some backdated.
  const liveKey = createKey(persistDir, `bench-feed-collector-${Date.now().toString(36)}`);
  const seconds = Number(process.env.BENCH_LAG_SECONDS ?? 20);
  const seen = new Map();
  let duplicates = 0;
  const lags = [];
  let stop = false;
  let after = null;
  const collector = (async () => {
    while (!stop || seen.size === 0) {
      for (;;) {
        const res = await httpGet(`${url}/v1/events/feed?limit=1000${after ? `&after=${encodeURIComponent(after)}` : ""}`, { ...headers, Authorization: `Bearer ${liveKey}` });
        if (res.status !== 200) throw new Error(`collector's feed answered ${res.status}`);
        const page = JSON.parse(res.body);
        const now = Date.now();
        for (const e of page.data) {
          if (seen.has(e.seq)) duplicates++;
          seen.set(e.seq, e.id);
          lags.push(now - uuidMs(e.id));
        }
        after = page.nextCursor;
        if (page.at_head) break;
      }
      if (stop) break;
      await sleep(1000);
    }
  })();
  const year = 365 * 86_400_000;
  const make = (i) => ({ ...sampleEvent(i), occurred_at: i % 10 === 0 ? new Date(Date.now() - ((i * 7919) % year)).toISOString() : undefined });
  let sent = 0;
  for (let s = 0; s < seconds; s++) {
    const t = Date.now();
    await batchLoad({ url, key: liveKey, total: 1000, concurrency: 4, makeEvent: (i) => make(sent + i) });
    sent += 1000;
    await sleep(Math.max(0, 1000 - (Date.now() - t)));
  }
  await sleep(2500);
  stop = true;
  await collector;
  // The project's chain also holds its key's record, if any: every seq from 1 to the head, once.
  const head = Math.max(...seen.keys());
  const missed = head - seen.size;
  lags.sort((a, b) => a - b);

  report("Pull feed (issue 37; at the runtime, no dev proxy)", [
    ...pageRows(`${total.toLocaleString("en-US")} hot events`, hot),
    ...(archived
      ? pageRows(`bench-tiered: ${archived.counts.archived.toLocaleString("en-US")} archived + ${archived.counts.hot.toLocaleString("en-US")} hot events`, archived.result)
      : [["feed over archived events", "not measured: run the archive bench first (npm run bench -- archive, same BENCH_DATA)"]]),
    [`collector polling every second, ~1,000 events/s for ${seconds} s, 10% backdated`, `${seen.size.toLocaleString("en-US")} events seen of ${head.toLocaleString("en-US")} seqs: ${missed} missed, ${duplicates} duplicated; lag commit to collector p50 ${fmt.ms(percentile(lags, 50))}, p95 ${fmt.ms(percentile(lags, 95))}`],
  ]);
  if (missed !== 0 || duplicates !== 0) throw new Error(`the collector missed ${missed} and saw ${duplicates} twice`);
}
