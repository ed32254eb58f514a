// Issue 36 benchmark: alert rules against a webhook receiver on this machine.
// - Batch ingest into a project with 0 rules and one with 100 enabled rules, in alternating rounds:
//   target, evaluation costs at most 10% of ingest throughput (it never runs inside the commit).
// - Notification latency from commit to the receiver while 1,000 events/s arrive: p50 / p95.
// The worst invocation of evaluation and delivery against the platform limits is in the meter
// report run.mjs prints after this bench.
import http from "node:http";
import { apiCall, batchLoad, createKey, fmt, percentile, sampleEvent } from "./lib.mjs";

const api = (url, key, method, path, body) => apiCall(url, key, method, path, body, { ip: "127.0.0.21" });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const live = (i) => ({ ...sampleEvent(i), occurred_at: undefined });

/** A webhook receiver: every firing's events with the time they arrived. */
async function receiver() {
  const arrivals = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const at = Date.now();
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        for (const e of body.firing.events) arrivals.push({ seq: e.seq, occurred: Date.parse(e.occurred_at), at, path: req.url });
      } catch {}
      res.writeHead(204).end();
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { arrivals, url: (path) => `http://127.0.0.1:${server.address().port}${path}`, close: () => new Promise((r) => server.close(r)) };
}

export default async function alertsBench({ runtimeUrl: url, persistDir, report }) {
  const rx = await receiver();
  const run = Date.now().toString(36);
  try {
    // 1. Ingest with 0 and 100 rules: each rule matches one organization of sampleEvent's 50 (2% of events), on one webhook.
    const none = createKey(persistDir, `bench-alerts-none-${run}`);
    const many = createKey(persistDir, `bench-alerts-many-${run}`);
    // The same 100 rules with no channel: evaluation and firings without deliveries, which says how much of
    // the difference is the deliveries and their receiver (both on this machine's two cores with ingest).
    const quiet = createKey(persistDir, `bench-alerts-quiet-${run}`);
    for (let i = 0; i < 100; i++) {
      const rule = { name: `rule ${i}`, match: { organization: `org_${i % 50}`, actions: [i % 2 ? "document.*" : "user.login.*"] } };
      await api(url, many, "POST", "/v1/alerts", { ...rule, channels: [{ type: "webhook", url: rx.url(`/many/${i}`) }] });
      await api(url, quiet, "POST", "/v1/alerts", { ...rule, channels: [] });
    }
    const perRound = Number(process.env.BENCH_ALERT_EVENTS ?? 20_000);
    const rates = { none: [], many: [], quiet: [] };
    // The evaluator delivers after a round has ended: wait until the receiver hears nothing more,
    // so its work (on these same two cores) lands in no other round's time.
    const settle = async () => {
      for (let last = -1; last !== rx.arrivals.length; ) {
        last = rx.arrivals.length;
        await sleep(3000);
      }
    };
    // A first round of each, not counted: the first load into a fresh project ran faster in every run (empty indexes).
    await batchLoad({ url, key: none, total: perRound, makeEvent: live });
    await batchLoad({ url, key: many, total: perRound, makeEvent: live });
    await batchLoad({ url, key: quiet, total: perRound, makeEvent: live });
    await settle();
    for (let r = 0; r < 3; r++) {
      rates.none.push((await batchLoad({ url, key: none, total: perRound, makeEvent: live })).perSecond);
      rates.many.push((await batchLoad({ url, key: many, total: perRound, makeEvent: live })).perSecond);
      await settle();
      rates.quiet.push((await batchLoad({ url, key: quiet, total: perRound, makeEvent: live })).perSecond);
      await sleep(3000);
    }
    const mean = (l) => l.reduce((a, b) => a + b, 0) / l.length;
    const ratio = mean(rates.many) / mean(rates.none);
    const quietRatio = mean(rates.quiet) / mean(rates.none);
    const firedEvents = rx.arrivals.filter((a) => a.path.startsWith("/many/")).length;

    // 2. Latency: one rule on every event, while about 1,000 events/s arrive for 20 s.
    const key = createKey(persistDir, `bench-alerts-latency-${run}`);
    await api(url, key, "POST", "/v1/alerts", { name: "everything", match: {}, channels: [{ type: "webhook", url: rx.url("/latency") }] });
    const seconds = Number(process.env.BENCH_LAG_SECONDS ?? 20);
    for (let s = 0; s < seconds; s++) {
      const started = Date.now();
      await batchLoad({ url, key, total: 1000, concurrency: 4, makeEvent: live });
      await sleep(Math.max(0, 1000 - (Date.now() - started)));
    }
    await sleep(5000);
    const lat = rx.arrivals.filter((a) => a.path === "/latency").map((a) => a.at - a.occurred).sort((a, b) => a - b);
    report("Alerts (issue 36; at the runtime, no dev proxy)", [
      ["batch ingest, 0 rules (100/request, 6 in flight, 3 rounds)", `${fmt.rate(mean(rates.none), "events/s")} (rounds ${rates.none.map((x) => x.toFixed(0)).join(", ")})`],
      ["batch ingest, 100 enabled rules", `${fmt.rate(mean(rates.many), "events/s")} (rounds ${rates.many.map((x) => x.toFixed(0)).join(", ")}): ${fmt.pct(ratio)} of 0 rules; target >= 90%; ${firedEvents.toLocaleString("en-US")} events named in firings`],
      ["batch ingest, the same 100 rules with no channel (no deliveries)", `${fmt.rate(mean(rates.quiet), "events/s")} (rounds ${rates.quiet.map((x) => x.toFixed(0)).join(", ")}): ${fmt.pct(quietRatio)} of 0 rules`],
      [`notification latency, commit to receiver, ~1,000 events/s for ${seconds} s`, lat.length ? `p50 ${fmt.ms(percentile(lat, 50))}, p95 ${fmt.ms(percentile(lat, 95))} over ${lat.length} events named (the first 20 of each firing); target: within 5 s` : "no notification arrived"],
    ]);
  } finally {
    await rx.close();
  }
}
