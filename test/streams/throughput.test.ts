/**
 * Figures for the issue's benchmarks, measured in workerd against the tests'
 * in-process receiver (no network): sustained delivery per stream, lag from
 * commit to receipt under steady ingest, and ingest with streams attached.
 * Assertions are loose (a shared 2-core machine); the figures are printed.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, createProject, ingestMany } from "../helpers";
import { createStream, events, Network, waitFor, webhookBody } from "./receiver";

let net: Network;
let restore: () => void;
beforeEach(() => {
  net = new Network();
  for (const h of ["fast.acme-receiver.com", "dd.acme-receiver.com", "lag.acme-receiver.com", "slow.acme-receiver.com"]) net.dns.set(h, ["93.184.216.34"]);
  restore = net.install();
});
afterEach(() => restore());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("stream figures", () => {
  it("sustained delivery per stream (webhook and Datadog)", async () => {
    const p = await createProject();
    const n = 10_000;
    await ingestMany(p.key, events(n, (i) => ({ metadata: { i, note: "some text to make the event a realistic size" } })));
    for (const [type, host] of [["webhook", "fast.acme-receiver.com"], ["datadog", "dd.acme-receiver.com"]] as const) {
      const s = await createStream(p.key, { type, url: `https://${host}/bulk`, ...(type === "datadog" ? { token: "k" } : {}) });
      const started = Date.now();
      expect((await call("POST", `/v1/streams/${s.id}/replay`, { key: p.key, body: { from_seq: 1 } })).status).toBe(202);
      await waitFor(p.key, s.id, (x) => x.delivered_seq === n, 120_000);
      const seconds = (Date.now() - started) / 1000;
      console.log(`[figure] ${type}: ${n} events delivered in ${seconds.toFixed(2)} s = ${Math.round(n / seconds)} events/s (${net.at(host).length} requests)`);
      expect(n / seconds).toBeGreaterThan(1000);
    }
  }, 240_000);

  it("lag from commit to receipt under 200 events/s", async () => {
    const p = await createProject();
    const s = await createStream(p.key, { type: "webhook", url: "https://lag.acme-receiver.com/lag" });
    await sleep(1200);
    const committedAt = new Map<number, number>();
    const start = Date.now();
    for (let tick = 0; tick < 60; tick++) {
      // 10 events every 50 ms: 200 events/s.
      const stored = await ingestMany(p.key, events(10));
      const now = Date.now();
      for (const e of stored) committedAt.set(e.seq, now);
      const next = start + (tick + 1) * 50;
      if (next > Date.now()) await sleep(next - Date.now());
    }
    const rate = (60 * 10) / ((Date.now() - start) / 1000);
    await waitFor(p.key, s.id, (x) => x.delivered_seq === 600, 30_000);
    const lags: number[] = [];
    const seen = new Set<number>();
    for (const r of net.at("lag.acme-receiver.com")) {
      for (const e of webhookBody(r).events) {
        if (seen.has(e.seq)) continue;
        seen.add(e.seq);
        lags.push(r.arrivedAt - committedAt.get(e.seq)!);
      }
    }
    lags.sort((a, b) => a - b);
    const p95 = lags[Math.floor(lags.length * 0.95)];
    console.log(`[figure] steady ingest ${rate.toFixed(0)} events/s: lag commit->receipt p50 ${lags[Math.floor(lags.length / 2)]} ms, p95 ${p95} ms, max ${lags.at(-1)} ms`);
    expect(seen.size).toBe(600);
    expect(p95).toBeLessThan(2000);
  }, 60_000);

  it("ingest with 3 streams attached, their destination hanging, is not slower", async () => {
    restore();
    restore = net.install({ timeoutMs: 60_000 });
    net.modes.set("slow.acme-receiver.com", "timeout");
    const timeIngest = async (key: string) => {
      const started = Date.now();
      for (let i = 0; i < 20; i++) await ingestMany(key, events(100));
      return Date.now() - started;
    };
    const bare = await createProject();
    const streamed = await createProject();
    for (let i = 0; i < 3; i++) await createStream(streamed.key, { type: "webhook", url: `https://slow.acme-receiver.com/s${i}` });
    await timeIngest(bare.key); // warm-up
    await timeIngest(streamed.key);
    // Alternating rounds, so both see the same machine load.
    let without = 0;
    let withStreams = 0;
    for (let round = 0; round < 3; round++) {
      without += await timeIngest(bare.key);
      withStreams += await timeIngest(streamed.key);
    }
    console.log(`[figure] ingest 3 x 2000 events in batches of 100: ${without} ms without streams, ${withStreams} ms with 3 streams (destination hanging)`);
    expect(withStreams).toBeLessThan(without * 1.5 + 200);
    restore();
    restore = net.install();
  }, 60_000);
});
