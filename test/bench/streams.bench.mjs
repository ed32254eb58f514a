// Issue 16 benchmark: log streams against a receiver on this machine (stream-receiver.mjs).
// Sustained delivery per stream draining a backlog, lag from commit to receipt under steady
// ingest, and ingest with three streams attached against none. The receiver fails the bench
// when a stream loses or reorders events. Creating, replaying and deleting a stream appends a
// witness.stream.* event to the project's chain, and a new stream delivers after its own
// witness.stream.created: each stream is expected from its delivered_seq (or a replay's from_seq)
// to the project's head, those records included; the lag figures count the bench's events only.
import http from "node:http";
import { apiCall, batchLoad, createKey, fmt, percentile, sampleEvent, wrk } from "./lib.mjs";
import { startReceiver } from "./stream-receiver.mjs";

const api = (url, key, method, path, body, agent = false) => apiCall(url, key, method, path, body, { agent });

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const backlog = Number(process.env.BENCH_STREAM_EVENTS ?? 50_000);
const lagSeconds = Number(process.env.BENCH_LAG_SECONDS ?? 20);
const batchTotal = Number(process.env.BENCH_STREAM_BATCH_EVENTS ?? 20_000);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// Live events carry no occurred_at: the ledger sets it to the event's received_at, the time it
// seals the batch it commits, which the lag figures count from.
const live = (i) => ({ ...sampleEvent(i), occurred_at: undefined });

export default async function streamsBench({ url, persistDir, report }) {
  const receiver = await startReceiver();
  const run = Date.now().toString(36); // BENCH_DATA may be reused: fresh projects each run
  const made = []; // [key, id]: deleted at the end, so a kept data directory holds no stream retrying a dead port
  const createStream = async (key, type, path) => {
    const s = await api(url, key, "POST", "/v1/streams", { type, url: receiver.url(path), ...(type === "datadog" ? { token: "bench" } : {}) });
    made.push([key, s.id]);
    return s;
  };
  try {
    // 1. A backlog drained by one stream, from seq 1 to the head: the backlog, then the
    // witness.stream.* records of this stream (created, replayed) and of the one before it.
    const drainKey = createKey(persistDir, `bench-streams-drain-${run}`);
    await batchLoad({ url, key: drainKey, total: backlog, makeEvent: live });
    const drains = [];
    for (const type of ["webhook", "datadog"]) {
      const path = `/drain-${type}`;
      const s = await createStream(drainKey, type, path);
      const started = performance.now();
      const replayed = await api(url, drainKey, "POST", `/v1/streams/${s.id}/replay`, { from_seq: 1 });
      // Its answer reads the head after the replay's own witness.stream.replayed: the last seq due.
      const head = replayed.delivered_seq + replayed.lag_events;
      const state = await receiver.waitForAll(path, head);
      const took = (performance.now() - started) / 1000;
      drains.push([type, head / took, took, state.requests, state.repeats, head]);
      await api(url, drainKey, "DELETE", `/v1/streams/${s.id}`);
    }

    // 2. Lag under steady ingest at 200 events/s: a batch of 10 every 50 ms (single events at
    // 200 req/s are more than this shared machine's dev server always keeps up with).
    const lagKey = createKey(persistDir, `bench-streams-lag-${run}`);
    const lagStream = await createStream(lagKey, "webhook", "/lag");
    await sleep(2000);
    const answeredAt = new Map();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    const sends = [];
    const ticks = lagSeconds * 20;
    const t0 = Date.now();
    for (let tick = 0; tick < ticks; tick++) {
      const events = Array.from({ length: 10 }, (_, j) => live(tick * 10 + j));
      sends.push(
        api(url, lagKey, "POST", "/v1/events/batch", { events }, agent).then((stored) => {
          for (const e of stored) answeredAt.set(e.seq, Date.now());
        }),
      );
      const next = t0 + (tick + 1) * 50;
      if (next > Date.now()) await sleep(next - Date.now());
    }
    await Promise.all(sends);
    const ingestRate = (ticks * 10) / ((Date.now() - t0) / 1000);
    agent.destroy();
    await receiver.waitForAll("/lag", lagStream.delivered_seq + ticks * 10, { after: lagStream.delivered_seq, timeoutMs: 120_000 });
    const lagArrivals = (await receiver.arrivals("/lag")).filter((a) => !a.action.startsWith("witness."));
    if (lagArrivals.length !== ticks * 10) throw new Error(`/lag: ${lagArrivals.length} of the ${ticks * 10} events sent arrived`);
    const fromSeal = lagArrivals.map((a) => a.at - a.occurredAt).sort((a, b) => a - b);
    const fromAnswer = lagArrivals.map((a) => a.at - answeredAt.get(a.seq)).sort((a, b) => a - b);
    const lagRow = (list) => `p50 ${list[Math.floor(list.length / 2)]} ms, p95 ${percentile(list, 95)} ms, max ${list.at(-1)} ms`;

    // 3. Ingest with three streams attached against none, alternating rounds. Under wrangler dev the
    // streams' delivery runs on the same runtime thread as ingest (deployed, each stream object runs
    // on its own), so a third project has three streams whose destination hangs: the ledger wakes
    // them as often, and they do (next to) no delivery work.
    const bareKey = createKey(persistDir, `bench-streams-bare-${run}`);
    const attachedKey = createKey(persistDir, `bench-streams-attached-${run}`);
    const hangingKey = createKey(persistDir, `bench-streams-hanging-${run}`);
    const attached = [];
    for (let i = 0; i < 3; i++) attached.push(await createStream(attachedKey, "webhook", `/attached-${i}`));
    for (let i = 0; i < 3; i++) await createStream(hangingKey, "webhook", `/hang/${i}`);
    await sleep(2000);
    const body = JSON.stringify(live(1));
    const headers = (key) => ({ Authorization: `Bearer ${key}`, "CF-Connecting-IP": "127.0.0.3" });
    const round = Math.max(1, Math.round(seconds / 2));
    const single = (key) => wrk({ url: `${url}/v1/events`, body, headers: headers(key), seconds: round });
    const cases = { bare: bareKey, attached: attachedKey, hanging: hangingKey };
    for (const key of Object.values(cases)) single(key); // warm-up
    const rounds = [];
    for (let i = 0; i < 3; i++) rounds.push(Object.fromEntries(Object.entries(cases).map(([name, key]) => [name, single(key)])));
    if (rounds.some((r) => Object.values(r).some((w) => w.errors > 0))) throw new Error("ingest requests failed during the benchmark");
    const batches = [];
    for (let i = 0; i < 2; i++) {
      const b = {};
      for (const [name, key] of Object.entries(cases)) b[name] = await batchLoad({ url, key, total: batchTotal, makeEvent: live });
      batches.push(b);
    }
    const mean = (list, pick) => list.reduce((sum, r) => sum + pick(r), 0) / list.length;
    const rps = Object.fromEntries(Object.keys(cases).map((name) => [name, mean(rounds, (r) => r[name].rps)]));
    const eps = Object.fromEntries(Object.keys(cases).map((name) => [name, mean(batches, (b) => b[name].perSecond)]));
    const versus = (m, unit) =>
      `${fmt.rate(m.bare, unit)} vs ${fmt.rate(m.attached, unit)} (${fmt.pct(m.attached / m.bare)}) delivering, ${fmt.rate(m.hanging, unit)} (${fmt.pct(m.hanging / m.bare)}) hanging`;
    // The attached streams must have everything too, in order: one more event tells the project's head.
    const head = (await api(url, attachedKey, "POST", "/v1/events", live(0))).seq;
    const settle = performance.now();
    // Each from its own start: stream 0 also carries the witness.stream.created of streams 1 and 2.
    for (let i = 0; i < 3; i++) await receiver.waitForAll(`/attached-${i}`, head, { after: attached[i].delivered_seq, timeoutMs: 300_000 });
    const caughtUp = (performance.now() - settle) / 1000;
    // A failed try (and its backoff) shows as a last error; repeats are batches sent again after one.
    const statuses = await Promise.all(attached.map((a) => api(url, attachedKey, "GET", `/v1/streams/${a.id}`)));
    const repeats = attached.reduce((n, _, i) => n + receiver.state(`/attached-${i}`).repeats, 0);
    const errors = statuses.map((x) => x.last_error).filter(Boolean);

    report("Log streams (wrangler dev, receiver on 127.0.0.1; the receiver checks every seq once, in order)", [
      ...drains.map(([type, rate, took, requests, repeats, head]) => [
        `sustained delivery, ${type}, backlog from seq 1`,
        `${fmt.rate(rate, "events/s")} (${head.toLocaleString("en-US")} events: ${backlog.toLocaleString("en-US")} + ${head - backlog} witness.stream.*, in ${took.toFixed(1)} s, ${requests} requests, ${repeats} repeated; target >= 5,000)`,
      ]),
      [`lag under steady ingest (${ingestRate.toFixed(0)} events/s in batches of 10, ${lagSeconds} s)`, "target p95 < 2 s"],
      ["  from the event's received_at (sealed for commit)", lagRow(fromSeal)],
      ["  from the ingest answer reaching the client", lagRow(fromAnswer)],
      ["single-event ingest, none vs 3 streams (wrk -c32, 3 alternating rounds)", versus(rps, "req/s")],
      [`batch ingest, none vs 3 streams (2 alternating rounds of ${batchTotal.toLocaleString("en-US")})`, versus(eps, "events/s")],
      ["3 attached streams caught up after ingest ended", `${caughtUp.toFixed(1)} s later, each every event from its start to seq ${head.toLocaleString("en-US")}`],
      ["  their failed tries / repeated batches", `${errors.length ? errors.join("; ") : "none"} / ${repeats}`],
    ]);
  } finally {
    for (const [key, id] of made) await api(url, key, "DELETE", `/v1/streams/${id}`).catch(() => {});
    await receiver.close();
  }
}
