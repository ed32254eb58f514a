/**
 * Issue #24, streams "pause": an admin stops a stream's delivery and later
 * resumes it from its cursor, with nothing lost and nothing sent twice but the
 * one batch a pause cut short (whole, with the same webhook-id).
 */
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, createProject, createScopedKey, ingestMany } from "../helpers";
import { createStream, events, Network, waitFor, webhookBody } from "./receiver";

const HOST = "paused.acme-receiver.com";
let net: Network;
let restore: () => void;
beforeEach(() => {
  net = new Network();
  net.dns.set(HOST, ["93.184.216.34"]);
  restore = net.install();
});
afterEach(() => restore());

const delivered = () => net.at(HOST).map((r) => ({ id: r.headers.get("webhook-id")!, seqs: webhookBody(r).events.map((e) => e.seq as number) }));
const actionsOf = () => net.at(HOST).flatMap((r) => webhookBody(r).events.map((e) => e.action as string));

describe("pausing and resuming a stream", () => {
  it("stops delivery, shows paused, and resumes from the cursor without loss or duplicates; admin only, recorded once", async () => {
    const p = await createProject();
    const s = await createStream(p.key, { type: "webhook", url: `https://${HOST}/in` });
    await ingestMany(p.key, events(2));
    await waitFor(p.key, s.id, (x) => x.delivered_seq === s.delivered_seq + 2);

    const { key: readKey } = await createScopedKey(p.id, ["read"]);
    expect((await call("POST", `/v1/streams/${s.id}/pause`, { key: readKey })).status).toBe(403);
    expect((await call("POST", "/v1/streams/str_nosuchstream000000000/pause", { key: p.key })).json.error.code).toBe("NOT_FOUND");

    const paused = await call("POST", `/v1/streams/${s.id}/pause`, { key: p.key });
    expect(paused.status).toBe(200);
    expect(paused.json.data).toMatchObject({ id: s.id, status: "paused", next_attempt_at: null });
    // Twice is once: no second record.
    expect((await call("POST", `/v1/streams/${s.id}/pause`, { key: p.key })).json.data.status).toBe("paused");
    const list = await call("GET", "/v1/streams", { key: p.key });
    expect(list.json.data[0].status).toBe("paused");

    const sentBefore = net.at(HOST).length;
    const during = await ingestMany(p.key, events(3, (i) => ({ action: `while.paused.${i}` })));
    // A replay while paused moves the cursor and stays paused.
    const head = during.at(-1).seq;
    const replayed = await call("POST", `/v1/streams/${s.id}/replay`, { key: p.key, body: { from_seq: head - 3 } });
    expect(replayed.status).toBe(202);
    expect(replayed.json.data).toMatchObject({ status: "paused", delivered_seq: head - 4 });
    await new Promise((r) => setTimeout(r, 400));
    expect(net.at(HOST).length).toBe(sentBefore);
    expect((await call("GET", `/v1/streams/${s.id}`, { key: p.key })).json.data).toMatchObject({ status: "paused", delivered_seq: head - 4 });

    const resumed = await call("POST", `/v1/streams/${s.id}/resume`, { key: p.key });
    expect(resumed.status).toBe(200);
    expect(resumed.json.data.status).toBe("active");
    expect((await call("POST", `/v1/streams/${s.id}/resume`, { key: p.key })).json.data.status).toBe("active");
    const done = await waitFor(p.key, s.id, (x) => x.lag_events === 0 && x.delivered_seq > head);
    expect(done.status).toBe("active");

    // Every seq once, in order: the part before the pause, then from the replayed cursor on.
    const seqs = delivered().flatMap((b) => b.seqs);
    const before = seqs.slice(0, seqs.indexOf(head - 3));
    const after = seqs.slice(seqs.indexOf(head - 3));
    expect(before).toEqual(Array.from({ length: before.length }, (_, i) => s.delivered_seq + 1 + i));
    expect(after).toEqual(Array.from({ length: done.delivered_seq - (head - 4) }, (_, i) => head - 3 + i));
    expect(actionsOf().filter((a) => a.startsWith("while.paused."))).toEqual(["while.paused.0", "while.paused.1", "while.paused.2"]);
    // Recorded in the chain once each, by the admin key, and delivered like any event.
    const audit = actionsOf().filter((a) => a === "witness.stream.paused" || a === "witness.stream.resumed");
    expect(audit).toEqual(["witness.stream.paused", "witness.stream.resumed"]);
    const chain = await call("GET", "/v1/events?action=witness.stream.paused", { key: p.key });
    expect(chain.json.data).toHaveLength(1);
    expect(chain.json.data[0]).toMatchObject({ targets: [{ type: "stream", id: s.id }], metadata: { type: "webhook", url: `https://${HOST}/in` } });
    const row = await env.DB.prepare("SELECT status FROM streams WHERE id = ?").bind(s.id).first<{ status: string }>();
    expect(row!.status).toBe("active");
  });

  it("a pause while a batch is on its way sends that same batch again, whole, on resume", async () => {
    const p = await createProject();
    const s = await createStream(p.key, { type: "webhook", url: `https://${HOST}/slow` });
    net.modes.set(HOST, "timeout");
    const stored = await ingestMany(p.key, events(3));
    // The batch reached the destination, which never answers.
    for (const until = Date.now() + 60_000; net.hanging === 0 && Date.now() < until; ) await new Promise((r) => setTimeout(r, 10));
    expect(net.hanging).toBe(1);
    const paused = await call("POST", `/v1/streams/${s.id}/pause`, { key: p.key });
    expect(paused.json.data).toMatchObject({ status: "paused", delivered_seq: s.delivered_seq });
    // The send times out while paused: the error is kept, the stream stays paused, nothing is retried.
    const stalled = await waitFor(p.key, s.id, (x) => x.last_error !== null);
    expect(stalled).toMatchObject({ status: "paused", delivered_seq: s.delivered_seq, next_attempt_at: null });
    await new Promise((r) => setTimeout(r, 300));
    expect(net.at(HOST)).toHaveLength(1);

    net.modes.set(HOST, "ok");
    await call("POST", `/v1/streams/${s.id}/resume`, { key: p.key });
    const last = stored.at(-1).seq;
    await waitFor(p.key, s.id, (x) => x.delivered_seq >= last + 2 && x.lag_events === 0);
    const batches = delivered();
    expect(batches[1]).toEqual(batches[0]);
    expect(batches[0].seqs).toEqual(stored.map((e) => e.seq));
    expect(batches.slice(2).flatMap((b) => b.seqs)).toEqual([last + 1, last + 2]);
  });
});
