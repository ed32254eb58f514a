import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, createProject, createScopedKey, ingest, ingestMany, until } from "../helpers";
import { Network } from "../streams/receiver";
import { verifyStandardWebhook } from "../streams/standard-webhooks";

const HOOK = "hooks.acme-alerts.com";
const SLACK = "hooks.slack.com";
const PD = "events.pagerduty.com";
const ROUTING_KEY = "R0UT1NGKEY0123456789abcdefABCDEF";
let net: Network;
let restore: () => void;
beforeEach(() => {
  net = new Network();
  for (const h of [HOOK, SLACK, PD, "outlook.acme-alerts.com"]) net.dns.set(h, ["93.184.216.34"]);
  restore = net.install();
});
afterEach(() => restore());

async function createRule(key: string, body: unknown) {
  const res = await call("POST", "/v1/alerts", { key, body });
  expect(res.status, res.text).toBe(201);
  return res.json.data;
}


const bodies = (host: string) => net.at(host).map((r) => JSON.parse(r.body));

describe("alert rules", () => {
  it("fire for matching events, once each, in a signed webhook naming the events, and keep a history with deliveries", async () => {
    const p = await createProject();
    const rule = await createRule(p.key, { name: "Admin granted", match: { actions: ["member.role.*"], organization: "org_1" }, channels: [{ type: "webhook", url: `https://${HOOK}/alerts` }] });
    const secret = rule.channels[0].secret;
    expect(secret).toMatch(/^whsec_/);
    expect((await call("GET", `/v1/alerts/${rule.id}`, { key: p.key })).json.data.channels[0].secret).toBeUndefined();
    const committed = Date.now();
    await ingestMany(p.key, [
      { action: "member.role.changed", organization: "org_1", occurred_at: "2020-01-01T00:00:00Z" },
      { action: "member.role.changed", organization: "org_2" },
      { action: "doc.read", organization: "org_1" },
    ]);
    const [received] = await until(async () => net.at(HOOK).length > 0 && net.at(HOOK));
    expect(received.arrivedAt - committed).toBeLessThan(5_000);
    expect(await verifyStandardWebhook(secret, received.headers, received.body)).toBe(true);
    const body = JSON.parse(received.body);
    expect(body.type).toBe("witness.alert.fired");
    expect(body.firing.events.map((e: any) => [e.action, e.organization])).toEqual([["member.role.changed", "org_1"]]);
    expect(body.firing.events[0].url).toMatch(/\/console\/events\//);
    // A later matching event fires again; the first is never sent twice.
    await ingest(p.key, { action: "member.role.removed", organization: "org_1" });
    await until(async () => net.at(HOOK).length > 1);
    await new Promise((r) => setTimeout(r, 1500));
    expect(bodies(HOOK).flatMap((b) => b.firing.events.map((e: any) => e.action))).toEqual(["member.role.changed", "member.role.removed"]);
    const firings = await call("GET", `/v1/alerts/${rule.id}/firings`, { key: p.key });
    expect(firings.json.data).toHaveLength(2);
    expect(firings.json.data[0].deliveries).toEqual([expect.objectContaining({ channel: 0, status: "delivered", attempts: 1 })]);
    expect((await call("GET", `/v1/alerts/${rule.id}`, { key: p.key })).json.data.channels[0].status).toBe("ok");
    // The rule's life is in the chain.
    const audit = await call("GET", "/v1/events?action=witness.alert.created", { key: p.key });
    expect(audit.json.data[0].targets).toEqual([{ type: "alert_rule", id: rule.id, name: "Admin granted" }]);
  });

  it("with a threshold, fire when count events fall in the window per group, then stay quiet for the cooldown; PagerDuty gets one dedup key per rule and group", async () => {
    const p = await createProject();
    const rule = await createRule(p.key, {
      name: "Login storm",
      match: { actions: ["auth.login.failed"] },
      threshold: { count: 3, window_seconds: 60, group_by: "actor_id" },
      cooldown_seconds: 3600,
      channels: [{ type: "pagerduty", routing_key: ROUTING_KEY, severity: "error" }],
    });
    const fail = (actor: string) => ({ action: "auth.login.failed", actor: { id: actor } });
    await ingestMany(p.key, [fail("u_1"), fail("u_2"), fail("u_1")]);
    await new Promise((r) => setTimeout(r, 2500));
    expect(net.at(PD)).toHaveLength(0);
    await ingestMany(p.key, [fail("u_1"), fail("u_1"), fail("u_2")]);
    const [sent] = await until(async () => net.at(PD).length > 0 && net.at(PD));
    const event = JSON.parse(sent.body);
    // PagerDuty Events API v2 (developer.pagerduty.com/docs/events-api-v2/trigger-events): these fields are required.
    expect(event).toMatchObject({ routing_key: ROUTING_KEY, event_action: "trigger", dedup_key: `witness:${p.id}:${rule.id}:u_1` });
    expect(event.payload).toMatchObject({ source: `witness/${p.id}`, severity: "error" });
    expect(event.payload.summary.length).toBeLessThanOrEqual(1024);
    expect(event.payload.summary).toContain("3 matching events within 60 s for actor_id u_1");
    expect(Date.parse(event.payload.timestamp)).not.toBeNaN();
    // Cooldown: more failures of u_1 do not page again.
    await ingestMany(p.key, [fail("u_1"), fail("u_1"), fail("u_1")]);
    await new Promise((r) => setTimeout(r, 2500));
    expect(net.at(PD)).toHaveLength(1);
  });

  it("test sends a marked notification on every channel; Slack text stays text; a failing receiver is retried and shown as failing", async () => {
    const p = await createProject();
    const rule = await createRule(p.key, {
      name: "<b>ops</b>",
      match: { actions: ["x.*"] },
      channels: [{ type: "slack", url: `https://${SLACK}/services/T0/B0/secret` }, { type: "webhook", url: `https://${HOOK}/down` }],
    });
    expect(rule.channels[0].url).toBe(`https://${SLACK}/…`);
    net.modes.set(HOOK, 503);
    const test = await call("POST", `/v1/alerts/${rule.id}/test`, { key: p.key });
    expect(test.status).toBe(200);
    expect(test.json.data.test).toBe(true);
    expect(test.json.data.deliveries.map((d: any) => d.status)).toEqual(["delivered", "retrying"]);
    // Its own channel's post: Slack's host is shared with the console's alert tests, which share a runtime with these.
    const slack = JSON.parse(net.at(SLACK).find((r) => r.url.endsWith("/B0/secret"))!.body);
    expect(slack.text).toContain("[TEST]");
    expect(slack.text).toContain("&lt;b&gt;ops&lt;/b&gt;");
    const view = (await call("GET", `/v1/alerts/${rule.id}`, { key: p.key })).json.data;
    expect(view.channels.map((c: any) => c.status)).toEqual(["ok", "failing"]);
    expect(view.channels[1].last_error).toMatch(/HTTP 503/);
    net.modes.set(HOOK, "ok");
    await until(async () => (await call("GET", `/v1/alerts/${rule.id}`, { key: p.key })).json.data.channels[1].status === "ok");
  });

  it("survives a restart between the commit and the notification: nothing lost, nothing repeated", async () => {
    const p = await createProject();
    await createRule(p.key, { name: "all", match: {}, channels: [{ type: "webhook", url: `https://${HOOK}/r` }] });
    net.modes.set(HOOK, "refused");
    await ingest(p.key, { action: "a.one" });
    const evaluator = env.ALERT_EVALUATOR.get(env.ALERT_EVALUATOR.idFromName(p.id));
    // The firing is recorded, its delivery pending (the receiver refuses).
    await until(async () => {
      const rules = await evaluator.list();
      return (await evaluator.firings(rules[0].id, null, 5)).length > 0;
    });
    // The object is evicted and comes back (as after a deploy or a crash).
    const { runInDurableObject } = await import("cloudflare:test");
    await runInDurableObject(evaluator, (_instance, state) => state.abort?.("restart") ?? undefined).catch(() => {});
    net.modes.set(HOOK, "ok");
    await until(async () => net.at(HOOK).some((r) => r.body.includes("a.one")));
    await ingest(p.key, { action: "a.two" });
    await until(async () => net.at(HOOK).some((r) => r.body.includes("a.two")));
    await new Promise((r) => setTimeout(r, 1500));
    const sent = net.at(HOOK).map((r) => JSON.parse(r.body).firing.events.map((e: any) => e.action)).flat();
    expect(sent.filter((a: string) => a === "a.one")).toHaveLength(1);
    expect(sent.filter((a: string) => a === "a.two")).toHaveLength(1);
  });

  it("refuses bad rules naming the field, and keys without admin", async () => {
    const p = await createProject();
    const refused = async (body: unknown, path: string) => {
      const res = await call("POST", "/v1/alerts", { key: p.key, body });
      expect(res.status, res.text).toBe(400);
      expect(res.json.error.details.issues.map((i: any) => i.path)).toContain(path);
    };
    await refused({ name: "x", channels: [{ type: "carrier-pigeon" }] }, "channels.0.type");
    await refused({ name: "x", channels: [{ type: "webhook", url: "http://127.0.0.1/x" }] }, "channels.0");
    await refused({ name: "x", channels: [{ type: "webhook", url: "not a url" }] }, "channels.0");
    await refused({ name: "x", channels: [{ type: "pagerduty", routing_key: "short" }] }, "channels.0");
    await refused({ name: "x", match: { actions: ["a*b"] }, channels: [] }, "match.actions.0");
    await refused({ name: "x", threshold: { count: 2, window_seconds: 86_401 }, channels: [] }, "threshold.window_seconds");
    await refused({ name: "x", match: { metadata: { role: "admin" } }, channels: [] }, "match.metadata.role");
    const reader = await createScopedKey(p.id, ["read", "ingest"]);
    expect((await call("POST", "/v1/alerts", { key: reader.key, body: { name: "x", channels: [] } })).status).toBe(403);
    const mine = await createRule(p.key, { name: "mine", channels: [] });
    const other = await createProject();
    expect((await call("GET", `/v1/alerts/${mine.id}`, { key: other.key })).status).toBe(404);
    expect((await call("DELETE", `/v1/alerts/${mine.id}`, { key: other.key })).status).toBe(404);
    expect((await call("PATCH", `/v1/alerts/${mine.id}`, { key: reader.key, body: { enabled: false } })).status).toBe(403);
    const patched = await call("PATCH", `/v1/alerts/${mine.id}`, { key: p.key, body: { enabled: false, name: "renamed" } });
    expect(patched.json.data).toMatchObject({ enabled: false, name: "renamed" });
    expect((await call("DELETE", `/v1/alerts/${mine.id}`, { key: p.key })).status).toBe(200);
    // What is left is the project's built-in integrity rule.
    expect((await call("GET", "/v1/alerts", { key: p.key })).json.data.map((r: any) => r.kind)).toEqual(["integrity"]);
  });
});
