import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, createProject, ingestMany } from "../helpers";
import { createStream, events, Network, waitFor, webhookBody, type Received } from "./receiver";
import { verifyStandardWebhook } from "./standard-webhooks";

const HOST = "hooks.acme-deliveries.com";
let net: Network;
let restore: () => void;
beforeEach(() => {
  net = new Network();
  for (const h of [HOST, "b.acme-receiver.com", "splunk.acme-receiver.com", "dd.acme-receiver.com"]) net.dns.set(h, ["93.184.216.34"]);
  restore = net.install();
});
afterEach(() => restore());

/** Every seq delivered to `host`, in arrival order, and the batches (webhook-id, seqs). */
function deliveries(host: string, onlyPath?: string) {
  const batches = net
    .at(host)
    .filter((r) => !onlyPath || new URL(r.url).pathname === onlyPath)
    .map((r: Received) => ({ id: r.headers.get("webhook-id")!, seqs: webhookBody(r).events.map((e) => e.seq as number), r }));
  return { batches, seqs: batches.flatMap((b) => b.seqs) };
}

describe("webhook delivery", () => {
  it("delivers events signed per Standard Webhooks, in the API's event shape", async () => {
    const p = await createProject();
    const s = await createStream(p.key, { type: "webhook", url: `https://${HOST}/hook` });
    // Out of order in time: the middle one occurred last.
    const occurred = [3, 1, 2].map((m) => new Date(Date.now() - m * 60_000).toISOString());
    const stored = await ingestMany(p.key, events(3, (i) => ({ metadata: { i }, occurred_at: occurred[i] })));
    // Delivery starts after the stream's own creation record (witness.stream.created, seq 1).
    expect(s.delivered_seq).toBe(1);
    expect(stored.map((e) => e.seq)).toEqual([2, 3, 4]);
    await waitFor(p.key, s.id, (x) => x.delivered_seq === 4);
    const got = net.at(HOST);
    expect(got.length).toBeGreaterThanOrEqual(1);
    for (const r of got) {
      expect(await verifyStandardWebhook(s.secret, r.headers, r.body)).toBe(true);
      // A different secret, a changed body or an old timestamp do not verify.
      expect(await verifyStandardWebhook(`whsec_${btoa("x".repeat(32))}`, r.headers, r.body)).toBe(false);
      expect(await verifyStandardWebhook(s.secret, r.headers, r.body.replace("user.login", "user.logou"))).toBe(false);
      expect(await verifyStandardWebhook(s.secret, r.headers, r.body, Math.floor(Date.now() / 1000) + 3600)).toBe(false);
      expect(r.headers.get("content-type")).toBe("application/json");
    }
    const body = webhookBody(got[0]);
    expect(body.type).toBe("witness.events");
    expect(body.project_id).toBe(p.id);
    // Standard Webhooks' payload timestamp: when the event occurred (the newest in the batch), as ISO 8601.
    for (const r of got) {
      const { timestamp, events: sent } = webhookBody(r);
      expect(timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
      expect(Date.parse(timestamp)).toBe(Math.max(...sent.map((e) => Date.parse(e.occurred_at))));
    }
    expect(Object.keys(body)).toEqual(["type", "timestamp", "project_id", "events"]);
    const all = got.flatMap((r) => webhookBody(r).events);
    expect(all).toEqual(stored);
    expect(got[0].headers.get("webhook-id")).toBe(`${s.id}:${all[0].seq}-${webhookBody(got[0]).events.at(-1).seq}`);
    const status = await waitFor(p.key, s.id, (x) => x.lag_events === 0);
    expect(status).toMatchObject({ status: "active", delivered_seq: 4, lag_events: 0, lag_seconds: 0, last_error: null });
    expect(Date.parse(status.last_success_at)).toBeGreaterThan(Date.now() - 60_000);
  });

  it("delivers a few thousand events in order, in batches", async () => {
    const p = await createProject();
    const s = await createStream(p.key, { type: "webhook", url: `https://${HOST}/bulk` });
    const n = 3000;
    const base = s.delivered_seq;
    await ingestMany(p.key, events(n));
    await waitFor(p.key, s.id, (x) => x.delivered_seq === base + n, 60_000);
    const { batches, seqs } = deliveries(HOST, "/bulk");
    expect(seqs).toEqual(Array.from({ length: n }, (_, i) => base + i + 1));
    expect(batches.length).toBeGreaterThanOrEqual(n / 500);
    expect(Math.max(...batches.map((b) => b.seqs.length))).toBeLessThanOrEqual(500);
    for (const b of batches) expect(b.id).toBe(`${s.id}:${b.seqs[0]}-${b.seqs.at(-1)}`);
  });

  it("survives a destination that is down (5xx, timeouts, refused), then back: all arrive, in order, duplicates only as whole batches", async () => {
    const p = await createProject();
    const s = await createStream(p.key, { type: "webhook", url: `https://${HOST}/flaky` });
    const base = s.delivered_seq;
    await ingestMany(p.key, events(200));
    await waitFor(p.key, s.id, (x) => x.delivered_seq === base + 200);

    for (const mode of [503, "timeout", "refused", 500] as const) {
      net.modes.set(HOST, mode);
      const before = (await waitFor(p.key, s.id, () => true)).delivered_seq;
      await ingestMany(p.key, events(150));
      const failing = await waitFor(p.key, s.id, (x) => x.status === "failing" && x.consecutive_failures >= 2);
      expect(failing.delivered_seq).toBe(before);
      expect(failing.next_attempt_at).not.toBeNull();
      expect(failing.lag_events).toBe(150);
      if (typeof mode === "number") {
        expect(failing.last_error).toMatch(new RegExp(`^HTTP ${mode}: destination says no x+$`));
        expect(failing.last_error.length).toBeLessThanOrEqual(220);
      } else {
        expect(failing.last_error).toMatch(mode === "timeout" ? /no answer within/ : /connection refused/);
      }
      const { rows } = { rows: await env.DB.prepare("SELECT status FROM streams WHERE id = ?").bind(s.id).all() };
      expect(rows.results[0]).toEqual({ status: "failing" });
      net.modes.set(HOST, "ok");
      const back = await waitFor(p.key, s.id, (x) => x.delivered_seq === before + 150);
      expect(back).toMatchObject({ status: "active", next_attempt_at: null, consecutive_failures: 0 });
      // The last error stays visible after recovery, older than the success.
      expect(back.last_error).toBe(failing.last_error);
      expect(Date.parse(back.last_success_at)).toBeGreaterThanOrEqual(Date.parse(back.last_error_at));
    }

    const { batches, seqs } = deliveries(HOST, "/flaky");
    // Every event at least once, in order once duplicates are dropped.
    const firstSeen = seqs.filter((q, i) => seqs.indexOf(q) === i);
    expect(firstSeen).toEqual(Array.from({ length: 800 }, (_, i) => base + i + 1));
    // Duplicates only as whole repeated batches, under the same webhook-id, with the same body (its timestamp too).
    const byId = new Map<string, number[]>();
    const bodies = new Map<string, string>();
    for (const b of batches) {
      const earlier = byId.get(b.id);
      if (earlier) expect(b.seqs).toEqual(earlier);
      if (bodies.has(b.id)) expect(b.r.body).toBe(bodies.get(b.id));
      byId.set(b.id, b.seqs);
      bodies.set(b.id, b.r.body);
    }
    expect(batches.length).toBeGreaterThan(byId.size); // something was repeated
    const ids = [...byId.keys()].map((id) => id.split(":")[1].split("-").map(Number));
    for (let i = 1; i < ids.length; i++) expect(ids[i][0]).toBe(ids[i - 1][1] + 1);
    // Every attempt of a batch is signed afresh and verifies.
    for (const b of batches) expect(await verifyStandardWebhook(s.secret, b.r.headers, b.r.body)).toBe(true);
  });

  it("a 410 disables the stream; replay re-enables it and sends again from a seq", async () => {
    const p = await createProject();
    const s = await createStream(p.key, { type: "webhook", url: `https://${HOST}/gone` });
    expect(s.delivered_seq).toBe(1); // seq 1: witness.stream.created
    await ingestMany(p.key, events(10));
    await waitFor(p.key, s.id, (x) => x.delivered_seq === 11);
    net.modes.set(HOST, 410);
    await ingestMany(p.key, events(5));
    const disabled = await waitFor(p.key, s.id, (x) => x.status === "disabled");
    expect(disabled).toMatchObject({ delivered_seq: 11, next_attempt_at: null });
    expect(disabled.last_error).toMatch(/^HTTP 410/);
    expect((await call("GET", "/v1/streams", { key: p.key })).json.data[0].status).toBe("disabled");
    // Disabled stays disabled: new events do not wake it.
    const tries = net.at(HOST).length;
    await ingestMany(p.key, events(5));
    await new Promise((r) => setTimeout(r, 300));
    expect(net.at(HOST).length).toBe(tries);

    net.modes.set(HOST, "ok");
    const replay = await call("POST", `/v1/streams/${s.id}/replay`, { key: p.key, body: { from_seq: 4 } });
    expect(replay.status).toBe(202);
    expect(replay.json.data.status).toBe("active");
    // Events 4..21, the last being the replay's own record (seq 22 is witness.stream.replayed).
    await waitFor(p.key, s.id, (x) => x.delivered_seq === 22);
    const after = net.at(HOST).slice(tries).flatMap((r) => webhookBody(r).events);
    expect(after.map((e) => e.seq)).toEqual(Array.from({ length: 19 }, (_, i) => i + 4));
    expect(after.at(-1)).toMatchObject({ action: "witness.stream.replayed", metadata: { from_seq: 4 }, targets: [{ type: "stream", id: s.id }] });
    expect((await call("POST", `/v1/streams/${s.id}/replay`, { key: p.key, body: { from_seq: 0 } })).status).toBe(400);
  });

  it("filters by actions (exact and prefix) and organization", async () => {
    const p = await createProject();
    const byAction = await createStream(p.key, { type: "webhook", url: `https://${HOST}/actions`, filter: { actions: ["doc.shared", "user.*"] } });
    const byOrg = await createStream(p.key, { type: "webhook", url: `https://${HOST}/org`, filter: { organization: "org_a", actions: ["billing.paid"] } });
    const kinds = ["user.login", "doc.shared", "doc.deleted", "billing.paid", "userx.other"];
    const stored = await ingestMany(p.key, events(50, (i) => ({ action: kinds[i % 5], organization: i % 2 ? "org_a" : "org_b" })));
    const last = stored.at(-1).seq; // after the two streams' creation records
    expect(last).toBe(52);
    await waitFor(p.key, byAction.id, (x) => x.delivered_seq === last);
    await waitFor(p.key, byOrg.id, (x) => x.delivered_seq === last);
    expect(deliveries(HOST, "/actions").seqs).toEqual(stored.filter((e) => ["user.login", "doc.shared"].includes(e.action)).map((e) => e.seq));
    expect(deliveries(HOST, "/org").seqs).toEqual(stored.filter((e) => e.action === "billing.paid" && e.organization === "org_a").map((e) => e.seq));
  });

  it("delivers only the stream's own project", async () => {
    const a = await createProject();
    const b = await createProject();
    const sa = await createStream(a.key, { type: "webhook", url: `https://${HOST}/iso` });
    const sb = await createStream(b.key, { type: "webhook", url: "https://b.acme-receiver.com/iso" });
    await ingestMany(a.key, events(7));
    await ingestMany(b.key, events(4));
    await waitFor(a.key, sa.id, (x) => x.delivered_seq === 8);
    await waitFor(b.key, sb.id, (x) => x.delivered_seq === 5);
    expect(net.at(HOST).flatMap((r) => webhookBody(r).events).every((e) => e.project_id === a.id)).toBe(true);
    expect(net.at("b.acme-receiver.com").flatMap((r) => webhookBody(r).events.map((e) => [e.project_id, e.seq]))).toEqual([2, 3, 4, 5].map((q) => [b.id, q]));
    // Each stream signs with its own secret.
    for (const r of net.at(HOST)) {
      expect(await verifyStandardWebhook(sa.secret, r.headers, r.body)).toBe(true);
      expect(await verifyStandardWebhook(sb.secret, r.headers, r.body)).toBe(false);
    }
  });

  it("reports events purged by retention before delivery as skipped", async () => {
    const p = await createProject();
    const s = await createStream(p.key, { type: "webhook", url: `https://${HOST}/gaps` });
    net.modes.set(HOST, 503);
    await ingestMany(p.key, events(10)); // seqs 2..11, after the stream's creation record
    await waitFor(p.key, s.id, (x) => x.status === "failing");
    // What a retention purge leaves: rows 4..7 gone (recorded in retention_gaps by the purge itself).
    await p.db.prepare("DELETE FROM events WHERE project_id = ? AND seq BETWEEN 4 AND 7").bind(p.id).run();
    await call("POST", `/v1/streams/${s.id}/replay`, { key: p.key, body: { from_seq: 2 } });
    const mark = net.received.length;
    net.modes.set(HOST, "ok");
    const done = await waitFor(p.key, s.id, (x) => x.delivered_seq === 12); // 12: the replay's record
    expect(done.skipped_events).toBe(4);
    expect(done.skipped_ranges).toEqual([expect.objectContaining({ first_seq: 4, last_seq: 7 })]);
    const ok = net.received.slice(mark).filter((r) => new URL(r.url).pathname === "/gaps");
    const seqs = ok.flatMap((r) => webhookBody(r).events.map((e) => e.seq));
    expect(seqs.filter((q, i) => seqs.indexOf(q) === i)).toEqual([2, 3, 8, 9, 10, 11, 12]);
  });
});

describe("retention at the end of the log", () => {
  it("skips past the newest events when retention purged them before delivery", async () => {
    const p = await createProject();
    const s = await createStream(p.key, { type: "webhook", url: `https://${HOST}/tail` });
    net.modes.set(HOST, 503);
    await ingestMany(p.key, events(5)); // seqs 2..6, after the stream's creation record
    await waitFor(p.key, s.id, (x) => x.status === "failing");
    // A purge of seqs 1..6 and its record, as chain/retention.ts leaves them.
    await p.db.prepare("DELETE FROM events WHERE project_id = ?").bind(p.id).run();
    await p.db
      .prepare("INSERT INTO retention_gaps (project_id, before_hash, last_hash, first_seq, last_seq, purged_count, purged_at) VALUES (?, NULL, 'h', 1, 6, 6, ?)")
      .bind(p.id, new Date().toISOString())
      .run();
    net.modes.set(HOST, "ok");
    const done = await waitFor(p.key, s.id, (x) => x.delivered_seq === 6);
    expect(done).toMatchObject({ skipped_events: 5, skipped_ranges: [expect.objectContaining({ first_seq: 2, last_seq: 6 })] });
    await waitFor(p.key, s.id, (x) => x.status === "active" && x.next_attempt_at === null);
    const mark = net.received.length;
    await ingestMany(p.key, events(2));
    await waitFor(p.key, s.id, (x) => x.delivered_seq === 8);
    expect(net.received.slice(mark).flatMap((r) => webhookBody(r).events.map((e) => e.seq))).toEqual([7, 8]);
  });
});

describe("Splunk and Datadog", () => {
  it("sends Splunk HEC events with the token", async () => {
    const p = await createProject();
    const s = await createStream(p.key, { type: "splunk", url: "https://splunk.acme-receiver.com/services/collector/event", token: "hec-token-1" });
    const stored = await ingestMany(p.key, events(5));
    await waitFor(p.key, s.id, (x) => x.delivered_seq === stored.at(-1).seq);
    const got = net.at("splunk.acme-receiver.com");
    expect(got.every((r) => r.headers.get("authorization") === "Splunk hec-token-1")).toBe(true);
    const objects = got.flatMap((r) => r.body.split("\n").map((line) => JSON.parse(line)));
    expect(objects.map((o) => o.event)).toEqual(stored);
    for (const [i, o] of objects.entries()) {
      expect(Object.keys(o)).toEqual(["time", "host", "source", "sourcetype", "event"]);
      expect(o.time).toBe(Date.parse(stored[i].occurred_at) / 1000);
      expect(o.sourcetype).toBe("witness:event");
    }
  });

  it("sends Datadog logs gzipped, at most 1,000 entries a request", async () => {
    const p = await createProject();
    const s = await createStream(p.key, { type: "datadog", url: "https://dd.acme-receiver.com/api/v2/logs", token: "dd-key-1" });
    const stored = await ingestMany(p.key, events(1500));
    await waitFor(p.key, s.id, (x) => x.delivered_seq === stored.at(-1).seq, 60_000);
    const got = net.at("dd.acme-receiver.com");
    expect(got.every((r) => r.headers.get("dd-api-key") === "dd-key-1" && r.headers.get("content-encoding") === "gzip")).toBe(true);
    const arrays = got.map((r) => JSON.parse(r.body) as any[]);
    expect(Math.max(...arrays.map((a) => a.length))).toBeLessThanOrEqual(1000);
    expect(got.every((r) => new TextEncoder().encode(r.body).length <= 5 * 1024 * 1024)).toBe(true);
    const entries = arrays.flat();
    expect(entries.map((e) => JSON.parse(e.message))).toEqual(stored);
    expect(entries[0]).toMatchObject({ ddsource: "witness", service: "witness", ddtags: `project_id:${p.id}` });
  });
});

describe("destinations checked again at delivery time", () => {
  // Default policy: the row is cached for minutes, so these pass only if every attempt looks the name up again.
  it("refuses to deliver once a name that was public at creation resolves to a private address (DNS rebinding)", async () => {
    const p = await createProject();
    const s = await createStream(p.key, { type: "webhook", url: `https://${HOST}/rebind` });
    const base = s.delivered_seq;
    await ingestMany(p.key, events(3));
    await waitFor(p.key, s.id, (x) => x.delivered_seq === base + 3);
    for (const [i, addresses] of [["169.254.169.254"], ["93.184.216.34", "::ffff:127.0.0.1"], ["fd00::1"]].entries()) {
      const sent = net.at(HOST).length;
      net.dns.set(HOST, addresses);
      await ingestMany(p.key, events(3));
      // Retries look again too: still private, still refused, nothing sent.
      const refused = await waitFor(p.key, s.id, (x) => x.status === "failing" && x.consecutive_failures >= 2);
      expect(refused.last_error, addresses.join()).toBe("destination refused: url's host name resolves to a private, loopback or link-local address");
      expect(refused.delivered_seq).toBe(base + 3 + 3 * i);
      expect(net.at(HOST).length).toBe(sent);
      expect((await env.DB.prepare("SELECT status FROM streams WHERE id = ?").bind(s.id).first())?.status).toBe("failing");
      // Public again: the stream recovers on its next try and delivers what waited.
      net.dns.set(HOST, ["93.184.216.34"]);
      await waitFor(p.key, s.id, (x) => x.delivered_seq === base + 6 + 3 * i && x.status === "active");
    }
    const seqs = deliveries(HOST, "/rebind").seqs;
    expect(seqs.filter((q, i) => seqs.indexOf(q) === i)).toEqual(Array.from({ length: 12 }, (_, i) => base + i + 1));
  });

  it("refuses to deliver when the name stops resolving (fails closed), and refuses redirects", async () => {
    const p = await createProject();
    const s = await createStream(p.key, { type: "webhook", url: `https://${HOST}/gone-name` });
    const base = s.delivered_seq;
    await ingestMany(p.key, events(3));
    await waitFor(p.key, s.id, (x) => x.delivered_seq === base + 3);
    const sent = net.at(HOST).length;
    net.dns.delete(HOST);
    await ingestMany(p.key, events(3));
    const refused = await waitFor(p.key, s.id, (x) => x.status === "failing");
    expect(refused).toMatchObject({ delivered_seq: base + 3, last_error: "destination refused: url's host name has no address" });
    expect(net.at(HOST).length).toBe(sent);

    net.dns.set(HOST, ["93.184.216.34"]);
    net.modes.set(HOST, 302);
    const redirected = await waitFor(p.key, s.id, (x) => x.last_error?.startsWith("HTTP 302"));
    expect(redirected).toMatchObject({ status: "failing", delivered_seq: base + 3 });
    net.modes.set(HOST, "ok");
    await waitFor(p.key, s.id, (x) => x.delivered_seq === base + 6 && x.status === "active");
  });

  it("replay refuses a seq past the next event", async () => {
    const p = await createProject();
    const s = await createStream(p.key, { type: "webhook", url: `https://${HOST}/r` });
    await ingestMany(p.key, events(2)); // seqs 2, 3 after the creation record
    expect((await call("POST", `/v1/streams/${s.id}/replay`, { key: p.key, body: { from_seq: 5 } })).status).toBe(400);
    expect((await call("POST", `/v1/streams/${s.id}/replay`, { key: p.key, body: { from_seq: 4 } })).status).toBe(202);
  });
});

describe("cold archive", () => {
  it("delivers archived events from the archive, not as skipped", async () => {
    const p = await createProject();
    const stored = await ingestMany(p.key, events(12));
    // Everything older than one day goes cold; "now" two days ahead, 4 events per segment.
    await env.DB.prepare("UPDATE projects SET hot_days = 1 WHERE id = ?").bind(p.id).run();
    const later = new Date(Date.now() + 2 * 86_400_000).toISOString();
    const ledger = env.LEDGER.get(env.LEDGER.idFromName(p.id));
    expect(await ledger.archiveSegment(later, { segmentRows: 4 })).toMatchObject({ archived: 4 });
    expect(await ledger.archiveSegment(later, { segmentRows: 4 })).toMatchObject({ archived: 4 });
    const hot = await p.db.prepare("SELECT min(seq) AS s FROM events WHERE project_id = ?").bind(p.id).first<{ s: number }>();
    expect(hot!.s).toBe(9);

    const s = await createStream(p.key, { type: "webhook", url: `https://${HOST}/cold` }); // its record: seq 13
    const mark = net.received.length;
    await call("POST", `/v1/streams/${s.id}/replay`, { key: p.key, body: { from_seq: 2 } }); // its record: seq 14
    const done = await waitFor(p.key, s.id, (x) => x.delivered_seq === 14);
    expect(done.skipped_events).toBe(0);
    const got = net.received.slice(mark).flatMap((r) => webhookBody(r).events);
    expect(got.slice(0, 11)).toEqual(stored.slice(1));
    expect(got.slice(11).map((e) => e.action)).toEqual(["witness.stream.created", "witness.stream.replayed"]);
  });
});
