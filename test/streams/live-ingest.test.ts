/**
 * Streams alongside a ledger that keeps committing: what the ledger must not
 * do (wait for a destination) and what the stream must not lose (events
 * committed while it is delivering). How fast either goes is measured by
 * `npm run bench` (test/bench/streams.bench.mjs), not asserted here.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { deliveryStub } from "../../src/streams/store";
import { call, createProject, ingestMany } from "../helpers";
import { createStream, events, Network, waitFor, webhookBody } from "./receiver";

let net: Network;
let restore: () => void;
beforeEach(() => {
  net = new Network();
  for (const h of ["live.acme-receiver.com", "slow.acme-receiver.com"]) net.dns.set(h, ["93.184.216.34"]);
  restore = net.install();
});
afterEach(() => restore());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("streams under live ingest", () => {
  it("delivers every event of many small commits made while it delivers, in order", async () => {
    const p = await createProject();
    const s = await createStream(p.key, { type: "webhook", url: "https://live.acme-receiver.com/live" });
    const stored: any[] = [];
    // 60 commits of 10, spaced so deliveries and commits interleave.
    for (let tick = 0; tick < 60; tick++) {
      stored.push(...(await ingestMany(p.key, events(10, (i) => ({ metadata: { tick, i } })))));
      await sleep(20);
    }
    await waitFor(p.key, s.id, (x) => x.delivered_seq === stored.at(-1).seq, 30_000);
    const batches = net.at("live.acme-receiver.com").map((r) => ({ id: r.headers.get("webhook-id"), events: webhookBody(r).events }));
    const seqs = batches.flatMap((b) => b.events.map((e) => e.seq));
    expect(seqs.filter((q, i) => seqs.indexOf(q) === i)).toEqual(stored.map((e) => e.seq));
    expect(batches.flatMap((b) => b.events).filter((e, i, all) => all.findIndex((x) => x.seq === e.seq) === i)).toEqual(stored);
    // Several deliveries, not one at the end: the stream kept up with the commits.
    expect(batches.length).toBeGreaterThan(1);
  }, 60_000);

  it("delivers bursts of commits on the ledger's wake-ups alone, the last commit of a burst included", async () => {
    restore();
    // Wakes coalesced over longer than a commit takes here, so commits do join a queued wake.
    restore = net.install({ idlePollMs: 600_000, wakeCoalesceMs: 300 });
    const p = await createProject();
    const s = await createStream(p.key, { type: "webhook", url: "https://live.acme-receiver.com/woken" });
    // An established stream: no early polling, its next look of its own ten minutes away.
    await runInDurableObject(deliveryStub(env, s.id), async (_, state) => {
      state.storage.kv.put("started_at", 0);
      await state.storage.setAlarm(Date.now() + 600_000);
    });
    const base = s.delivered_seq; // the stream's creation record
    let total = 0;
    for (let burst = 0; burst < 4; burst++) {
      // Single events one after another: commits closer together than the ledger sends wakes.
      for (let i = 0; i < 15; i++) expect((await call("POST", "/v1/events", { key: p.key, body: events(1)[0] })).status).toBe(201);
      total += 15;
      await waitFor(p.key, s.id, (x) => x.delivered_seq === base + total);
    }
    const seqs = net.at("live.acme-receiver.com").flatMap((r) => webhookBody(r).events.map((e) => e.seq));
    expect(seqs.filter((q, i) => seqs.indexOf(q) === i)).toEqual(Array.from({ length: total }, (_, i) => base + i + 1));
  });

  it("ingest succeeds while all three of the project's streams hang on their destination", async () => {
    // Destinations that take a request and never answer; the sender gives up only after a minute.
    restore();
    restore = net.install({ timeoutMs: 60_000 });
    net.modes.set("slow.acme-receiver.com", "timeout");
    const p = await createProject();
    const created: { id: string; delivered_seq: number }[] = [];
    for (let i = 0; i < 3; i++) created.push(await createStream(p.key, { type: "webhook", url: `https://slow.acme-receiver.com/s${i}` }));
    await ingestMany(p.key, events(5));
    const end = Date.now() + 20_000;
    while (net.hanging < 3 && Date.now() < end) await sleep(20);
    expect(net.hanging).toBe(3);

    // Every stream now has a request in flight that will not be answered; ingest goes on regardless.
    const stored = await ingestMany(p.key, events(500));
    // After the three streams' creation records (seqs 1-3) and the first 5.
    expect(stored.map((e) => e.seq)).toEqual(Array.from({ length: 500 }, (_, i) => i + 9));
    const single = await call("POST", "/v1/events", { key: p.key, body: events(1)[0] });
    expect(single.status).toBe(201);
    expect(net.hanging).toBe(3);
    for (const s of created) expect((await call("GET", `/v1/streams/${s.id}`, { key: p.key })).json.data.delivered_seq).toBe(s.delivered_seq);
  }, 60_000);
});
