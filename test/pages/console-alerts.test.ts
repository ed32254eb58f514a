import { exports } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BASE, call, createProject, createScopedKey, ingestMany, until } from "../helpers";
import { Network } from "../streams/receiver";
import { verifyStandardWebhook } from "../streams/standard-webhooks";
import { consoleFetch, signIn } from "./console-helpers";

const HOOK = "hooks.console-alerts.com";
const SLACK = "hooks.slack.com";
const PD = "events.pagerduty.com";
const HOSTILE = `<script>alert("x")</script>`;
const HOSTILE_TEXT = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;";

let net: Network;
let restore: () => void;
beforeEach(() => {
  net = new Network();
  for (const h of [HOOK, SLACK, PD]) net.dns.set(h, ["93.184.216.34"]);
  restore = net.install();
});
afterEach(() => restore());

async function createRule(key: string, body: unknown) {
  const res = await call("POST", "/v1/alerts", { key, body });
  expect(res.status, res.text).toBe(201);
  return res.json.data;
}

const rules = async (key: string) => (await call("GET", "/v1/alerts", { key })).json.data as any[];


/** The text of an HTML fragment: tags dropped, entities decoded, spaces collapsed. */
const textOf = (html: string) =>
  html
    .replace(/<[^>]+>/g, "")
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&quot;", '"')
    .replaceAll("&#39;", "'")
    .replaceAll("&amp;", "&")
    .replace(/\s+/g, " ");

/** The firings table's rows. */
const firingRows = (html: string) => [.../<table class="firings">[\s\S]*?<tbody>([\s\S]*?)<\/tbody>/.exec(html)![1].matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((m) => m[1]);

describe("console alerts", () => {
  it("creates a rule through the form (the API then lists it), says in words what it watches, and shows a webhook secret once", async () => {
    const p = await createProject();
    const { cookie, csrf } = await signIn(p.key);

    const page = await consoleFetch("/console/alerts", { cookie });
    expect(page.status).toBe(200);
    expect(page.text).toContain('href="/console/alerts" aria-current="page"');
    // Every project has the built-in integrity rule, with no channel until one is set.
    expect(page.text).toContain("Integrity of the trail");
    expect(textOf(page.text)).toContain("None yet: its firings are kept, but nobody is told.");
    expect(page.text).toContain('<form method="post" action="/console/alerts"');

    const created = await consoleFetch("/console/alerts", {
      cookie,
      form: {
        csrf,
        name: "Login storm",
        kind: "events",
        actions: "auth.login.failed, member.role.*",
        organization: "org_1",
        actor_id: "",
        threshold_count: "3",
        window_seconds: "300",
        group_by: "actor_id",
        cooldown_seconds: "3600",
        channel_type: "slack",
        channel_url: `https://${SLACK}/services/T0/B0/very-secret`,
        routing_key: "",
        severity: "",
      },
    });
    expect(created.status, created.text).toBe(303);
    const rule = (await rules(p.key)).find((r) => r.name === "Login storm");
    expect(rule).toMatchObject({
      kind: "events",
      match: { actions: ["auth.login.failed", "member.role.*"], organization: "org_1" },
      threshold: { count: 3, window_seconds: 300, group_by: "actor_id" },
      cooldown_seconds: 3600,
      enabled: true,
      channels: [{ type: "slack", url: `https://${SLACK}/…`, status: "pending" }],
    });
    expect(created.headers.get("Location")).toBe(`/console/alerts?created=${rule.id}`);
    const after = await consoleFetch(created.headers.get("Location")!, { cookie });
    const words = textOf(after.text);
    expect(words).toContain("Rule “Login storm” created");
    expect(words).toContain("Events of action auth.login.failed or any action starting with member.role. in organization org_1.");
    expect(words).toContain("When 3 matching events are committed within 5 min, counted per actor_id. Then quiet for 1 h (per actor_id).");
    expect(words).toContain("Channel 1: slack → https://hooks.slack.com/…");
    // A Slack URL is a secret: never shown, nor its secret path.
    expect(after.text).not.toContain("very-secret");
    expect(after.text).not.toContain("will not be shown again");

    // An anomaly rule: actions only, its own settings, no threshold.
    const unusual = await consoleFetch("/console/alerts", { cookie, form: { csrf, name: "Export surge", kind: "anomaly", actions: "export.*", min_count: "50", sensitivity: "2.5", channel_type: "" } });
    expect(unusual.status, unusual.text).toBe(303);
    expect((await rules(p.key)).find((r) => r.name === "Export surge")).toMatchObject({ kind: "anomaly", match: { actions: ["export.*"] }, threshold: null, anomaly: { min_count: 50, sensitivity: 2.5 }, channels: [] });
    const surge = textOf((await consoleFetch(unusual.headers.get("Location")!, { cookie })).text);
    expect(surge).toContain("Unusual volume of any action starting with export.: the hour under way (UTC) against the same hour of each of the last 7 days.");
    expect(surge).toContain("(min_count 50, sensitivity 2.5); at most once an hour.");
    expect(surge).toContain("None: its firings are kept, but nobody is told.");
    const mixed = await consoleFetch("/console/alerts", { cookie, form: { csrf, name: "Mixed", kind: "anomaly", actions: "export.*", organization: "org_1", channel_type: "" } });
    expect(mixed.status).toBe(400);
    expect(textOf(mixed.text)).toContain("an anomaly rule counts actions per hour");
    expect(mixed.text).toContain('<option value="anomaly" selected="">');

    // A webhook channel's signing secret is on the answer that made it, once.
    const hooked = await consoleFetch("/console/alerts", { cookie, form: { csrf, name: "Any role change", actions: "member.role.*", channel_type: "webhook", channel_url: `https://${HOOK}/in` } });
    expect(hooked.status).toBe(200);
    expect(hooked.text).toContain("it will not be shown again");
    const secret = /<code class="secret">(whsec_[^<]+)<\/code>/.exec(hooked.text)?.[1];
    expect(secret).toBeTruthy();
    const hook = (await rules(p.key)).find((r) => r.name === "Any role change");
    expect(hook.channels[0].secret).toBeUndefined();
    // It is the secret the notifications are signed with.
    expect((await call("POST", `/v1/alerts/${hook.id}/test`, { key: p.key })).status).toBe(200);
    const [received] = net.at(HOOK);
    expect(await verifyStandardWebhook(secret!, received.headers, received.body)).toBe(true);
    const later = await consoleFetch("/console/alerts", { cookie });
    expect(later.text).not.toContain(secret!);
    expect(later.text).not.toContain("will not be shown again");

    // The API's refusal is shown, naming the field, with what was typed kept (but never a URL or a key).
    const refused = await consoleFetch("/console/alerts", {
      cookie,
      form: { csrf, name: "Half a threshold", threshold_count: "5", channel_type: "webhook", channel_url: "http://127.0.0.1/x" },
    });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain("VALIDATION_ERROR");
    expect(refused.text).toContain("threshold.window_seconds");
    expect(refused.text).toContain('value="Half a threshold"');
    expect(refused.text).toContain('<option value="webhook" selected="">');
    expect(refused.text).not.toContain("127.0.0.1");
    const local = await consoleFetch("/console/alerts", { cookie, form: { csrf, name: "Local", channel_type: "webhook", channel_url: "http://127.0.0.1/x" } });
    expect(local.status).toBe(400);
    expect(textOf(local.text)).toMatch(/VALIDATION_ERROR: channels\.0: url: /);
    const pd = await consoleFetch("/console/alerts", { cookie, form: { csrf, name: "Pager", channel_type: "pagerduty", routing_key: "short" } });
    expect(pd.status).toBe(400);
    expect(pd.text).toContain("routing_key must be the 32-character integration key");
    // A forged form makes nothing.
    expect((await consoleFetch("/console/alerts", { cookie, form: { csrf: "forged", name: "Forged" } })).status).toBe(403);
    expect((await rules(p.key)).map((r) => r.name).sort()).toEqual(["Any role change", "Export surge", "Integrity of the trail", "Login storm"]);
  });

  it("sends a test and shows each delivery; a failing channel stands out with its error; sets the integrity rule's channel; disables and deletes", async () => {
    const p = await createProject();
    const rule = await createRule(p.key, {
      name: "Two channels",
      match: { actions: ["x.*"] },
      channels: [{ type: "slack", url: `https://${SLACK}/services/T0/B0/s` }, { type: "webhook", url: `https://${HOOK}/down` }],
    });
    net.modes.set(HOOK, 503);
    const { cookie, csrf } = await signIn(p.key);

    const before = await consoleFetch(`/console/alerts/${rule.id}`, { cookie });
    expect(before.text).toContain(`action="/console/alerts/${rule.id}/test"`);
    const tested = await consoleFetch(`/console/alerts/${rule.id}/test`, { cookie, form: { csrf } });
    expect(tested.status).toBe(200);
    const result = textOf(/aria-label="Test result">([\s\S]*?)<\/div>/.exec(tested.text)![1]);
    expect(result).toContain("Test notification sent");
    expect(result).toMatch(/Channel 1 \(slack\): delivered after 1 attempt/);
    expect(result).toMatch(/Channel 2 \(webhook\): ⚠ retrying this try failed; it is retried with backoff; 1 attempt · error: HTTP 503/);
    expect(JSON.parse(net.at(SLACK).find((r) => r.url.endsWith("/B0/s"))!.body).text).toContain("[TEST]");
    // The test is kept among the firings, marked as one.
    expect(firingRows(tested.text)).toHaveLength(1);
    expect(firingRows(tested.text)[0]).toContain('<span class="badge">test</span>');

    // The failing channel: the word and its last error, not only a colour; the list says which rules fail.
    const list = await consoleFetch("/console/alerts", { cookie });
    const card = /<section class="card rule failing" aria-label="Alert rule Two channels">([\s\S]*?)<\/section>/.exec(list.text)?.[1];
    expect(card).toBeTruthy();
    const cardText = textOf(card!);
    expect(cardText).toContain("⚠ 1 channel failing");
    expect(cardText).toMatch(/Channel 2: webhook → https:\/\/hooks\.console-alerts\.com\/down · ⚠ failing its last delivery failed/);
    expect(cardText).toMatch(/Last error \(just now\): HTTP 503/);
    // The exact time stays in the <time> element's title.
    expect(card).toMatch(/\(<time datetime="[^"]+" title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC">just now<\/time>\)/);
    expect(cardText).toMatch(/Channel 1: slack → https:\/\/hooks\.slack\.com\/… · ok its last delivery arrived/);
    expect(textOf(list.text)).toContain("⚠ Failing channels: Two channels.");

    // The integrity rule takes a channel like any other; a webhook's secret is shown once.
    const integrity = (await rules(p.key)).find((r) => r.kind === "integrity");
    const set = await consoleFetch(`/console/alerts/${integrity.id}/channel`, { cookie, form: { csrf, from: "list", channel_type: "webhook", channel_url: `https://${HOOK}/integrity` } });
    expect(set.status).toBe(200);
    expect(textOf(set.text)).toContain("Rule “Integrity of the trail” saved");
    expect(set.text).toMatch(/<code class="secret">whsec_/);
    expect((await call("GET", `/v1/alerts/${integrity.id}`, { key: p.key })).json.data.channels).toMatchObject([{ type: "webhook", url: `https://${HOOK}/integrity` }]);
    // A refusal is shown on the page the form was on.
    const wrong = await consoleFetch(`/console/alerts/${integrity.id}/channel`, { cookie, form: { csrf, from: "rule", channel_type: "teams" } });
    expect(wrong.status).toBe(400);
    expect(wrong.text).toContain("<h1>Alert rule: <span>Integrity of the trail</span></h1>");
    expect(textOf(wrong.text)).toContain("VALIDATION_ERROR: channels.0: url is required for this channel type");
    // Replacing with no channel takes them all away, and goes back to the page it came from.
    const cleared = await consoleFetch(`/console/alerts/${integrity.id}/channel`, { cookie, form: { csrf, from: "rule", channel_type: "" } });
    expect(cleared.status).toBe(303);
    expect(cleared.headers.get("Location")).toBe(`/console/alerts/${integrity.id}?saved=${integrity.id}`);
    expect((await call("GET", `/v1/alerts/${integrity.id}`, { key: p.key })).json.data.channels).toEqual([]);

    const disabled = await consoleFetch(`/console/alerts/${rule.id}/enabled`, { cookie, form: { csrf, from: "rule", enabled: "false" } });
    expect(disabled.status).toBe(303);
    expect(disabled.headers.get("Location")).toBe(`/console/alerts/${rule.id}?saved=${rule.id}`);
    expect((await call("GET", `/v1/alerts/${rule.id}`, { key: p.key })).json.data.enabled).toBe(false);
    const rulePage = await consoleFetch(disabled.headers.get("Location")!, { cookie });
    expect(textOf(rulePage.text)).toContain("Rule “Two channels” saved");
    expect(rulePage.text).toContain('<span class="badge ">disabled</span>');
    expect(rulePage.text).toMatch(/<input type="hidden" name="enabled" value="true"\/>\s*<button type="submit">Enable<\/button>/);
    const enabled = await consoleFetch(`/console/alerts/${rule.id}/enabled`, { cookie, form: { csrf, from: "list", enabled: "true" } });
    expect(enabled.headers.get("Location")).toBe(`/console/alerts?saved=${rule.id}`);
    expect((await call("GET", `/v1/alerts/${rule.id}`, { key: p.key })).json.data.enabled).toBe(true);

    const deleted = await consoleFetch(`/console/alerts/${rule.id}/delete`, { cookie, form: { csrf } });
    expect(deleted.status).toBe(303);
    expect(deleted.headers.get("Location")).toBe("/console/alerts?deleted=1");
    expect((await call("GET", `/v1/alerts/${rule.id}`, { key: p.key })).status).toBe(404);
    expect(textOf((await consoleFetch("/console/alerts?deleted=1", { cookie })).text)).toContain("The rule was deleted");
    // Acting on a rule that is gone is the API's 404, shown on the page.
    const gone = await consoleFetch(`/console/alerts/${rule.id}/delete`, { cookie, form: { csrf } });
    expect(gone.status).toBe(404);
    expect(gone.text).toContain("NOT_FOUND");
    expect((await consoleFetch(`/console/alerts/${rule.id}`, { cookie })).status).toBe(404);
    expect((await consoleFetch("/console/alerts/not-a-rule", { cookie })).status).toBe(404);
  });

  it("lists a rule's firings, newest first and paged, with their events as links showing the sentence or the action, and each delivery", async () => {
    const p = await createProject();
    // Straight to the Worker: this test is about the sentence, not the schema answer's shape (the API tests check that).
    const schema = await exports.default.fetch(
      new Request(`${BASE}/v1/schemas/member.role.changed`, {
        method: "PUT",
        headers: { Authorization: `Bearer ${p.key}`, "Content-Type": "application/json", "CF-Connecting-IP": "10.8.0.1" },
        body: JSON.stringify({ description: "A role changed", display: "{actor.id} changed a role" }),
      }),
    );
    expect(schema.status, await schema.text()).toBe(201);
    const rule = await createRule(p.key, { name: "Roles", match: { actions: ["member.role.*"] }, channels: [{ type: "webhook", url: `https://${HOOK}/roles` }] });
    await ingestMany(p.key, [
      { action: "member.role.changed", actor: { id: "u_1", type: "user" } },
      { action: "member.role.removed", actor: { id: "u_2", type: "user" } },
    ]);
    const firings = await until(async () => {
      const res = (await call("GET", `/v1/alerts/${rule.id}/firings`, { key: p.key })).json.data as any[];
      const events = res.flatMap((f) => f.events);
      return events.length === 2 && res.every((f) => f.deliveries.every((d: any) => d.status === "delivered")) && res;
    });
    const events = firings.flatMap((f) => f.events);
    const changed = events.find((e) => e.action === "member.role.changed");
    const removed = events.find((e) => e.action === "member.role.removed");
    const { cookie } = await signIn(p.key);

    const page = await consoleFetch(`/console/alerts/${rule.id}`, { cookie });
    expect(page.status).toBe(200);
    expect(page.text).toContain('href="/console/alerts" aria-current="page"');
    const rows = firingRows(page.text);
    expect(rows).toHaveLength(firings.length);
    const all = rows.join("");
    expect(all).toContain(`<a href="/console/events/${changed.id}" class="sentence">u_1 changed a role</a>`);
    expect(all).toContain(`<a href="/console/events/${removed.id}">member.role.removed</a>`);
    expect(textOf(all)).toContain("Channel 1 (webhook): delivered after 1 attempt");
    expect(textOf(rows[rows.length - 1])).toContain(firings[firings.length - 1].reason);
    // The link opens the event.
    expect((await consoleFetch(`/console/events/${changed.id}`, { cookie })).status).toBe(200);

    // Paged, newest first: 20 tests make a full page, the events' firings are on the next.
    for (let i = 0; i < 20; i++) expect((await call("POST", `/v1/alerts/${rule.id}/test`, { key: p.key })).status).toBe(200);
    const first = await consoleFetch(`/console/alerts/${rule.id}`, { cookie });
    expect(firingRows(first.text)).toHaveLength(20);
    expect(firingRows(first.text).every((r) => r.includes('<span class="badge">test</span>'))).toBe(true);
    const next = /<a href="(\/console\/alerts\/[^"]+\?cursor=\d+)" rel="next">Older firings<\/a>/.exec(first.text)?.[1];
    expect(next).toBeTruthy();
    const second = await consoleFetch(next!, { cookie });
    expect(second.status).toBe(200);
    expect(firingRows(second.text)).toHaveLength(firings.length);
    expect(second.text).toContain(`href="/console/events/${changed.id}"`);
    expect(second.text).toContain(`<a href="/console/alerts/${rule.id}">Newest firings</a>`);
    expect(second.text).not.toContain("Older firings");
    // A cursor the API refuses is shown as its error, not a 500.
    const bad = await consoleFetch(`/console/alerts/${rule.id}?cursor=nope`, { cookie });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("cursor must be a nextCursor of an earlier page");
  });

  it("makes an e-mail channel from a comma-separated list, and names a bad address by its place", async () => {
    const p = await createProject();
    const { cookie, csrf } = await signIn(p.key);
    const form = (to: string) => ({ csrf, name: "Mail me", kind: "events", actions: "export.*", channel_type: "email", email_to: to, channel_url: "", routing_key: "", severity: "" });
    const bad = await consoleFetch("/console/alerts", { cookie, form: form("sec@example.com, not-an-address") });
    expect(bad.status).toBe(400);
    expect(textOf(bad.text)).toContain("channels.0.to.1");
    const made = await consoleFetch("/console/alerts", { cookie, form: form("sec@example.com, oncall@example.com") });
    expect([200, 303]).toContain(made.status);
    const rules = await call("GET", "/v1/alerts", { key: p.key });
    expect(rules.json.data.find((r: { name: string }) => r.name === "Mail me").channels[0]).toMatchObject({ type: "email", to: ["sec@example.com", "oncall@example.com"] });
  });

  it("renders hostile names and values inert", async () => {
    const p = await createProject();
    const rule = await createRule(p.key, { name: HOSTILE, match: { actions: [`${HOSTILE}*`], organization: HOSTILE }, channels: [] });
    expect((await call("POST", `/v1/alerts/${rule.id}/test`, { key: p.key })).status).toBe(200);
    const { cookie, csrf } = await signIn(p.key);
    for (const path of ["/console/alerts", `/console/alerts/${rule.id}`]) {
      const page = await consoleFetch(path, { cookie });
      expect(page.status).toBe(200);
      expect(page.text).not.toContain(HOSTILE);
      expect(page.text).toContain(HOSTILE_TEXT);
      expect(page.headers.get("Content-Security-Policy")).toContain("script-src 'self'");
    }
    // Through the form too, and in the refusal that echoes it back.
    const made = await consoleFetch("/console/alerts", { cookie, form: { csrf, name: HOSTILE, organization: HOSTILE, channel_type: "" } });
    expect(made.status).toBe(303);
    const refused = await consoleFetch("/console/alerts", { cookie, form: { csrf, name: HOSTILE, threshold_count: "x", channel_type: "" } });
    expect(refused.status).toBe(400);
    expect(refused.text).not.toContain(HOSTILE);
    expect(refused.text).toContain(`value="${HOSTILE_TEXT}"`);
  });

  it("shows a read key every rule and firing without a form, refuses its POSTs, and keeps an ingest key out", async () => {
    const p = await createProject();
    const rule = await createRule(p.key, { name: "Watched", match: { actions: ["a.*"] }, channels: [{ type: "webhook", url: `https://${HOOK}/r` }] });
    expect((await call("POST", `/v1/alerts/${rule.id}/test`, { key: p.key })).status).toBe(200);
    const reader = await createScopedKey(p.id, ["read"]);
    const asReader = await signIn(reader.key);

    const list = await consoleFetch("/console/alerts", { cookie: asReader.cookie });
    expect(list.status).toBe(200);
    expect(list.text).toContain("Watched");
    expect(list.text).toContain("Integrity of the trail");
    expect(list.text).toContain("Creating, changing, testing and deleting rules needs an admin key.");
    expect(list.text).not.toContain('method="post" action="/console/alerts');
    const one = await consoleFetch(`/console/alerts/${rule.id}`, { cookie: asReader.cookie });
    expect(one.status).toBe(200);
    expect(firingRows(one.text)).toHaveLength(1);
    expect(one.text).not.toContain('method="post" action="/console/alerts');

    const { csrf } = asReader;
    const posts: [string, Record<string, string>][] = [
      ["/console/alerts", { csrf, name: "Mine", channel_type: "" }],
      [`/console/alerts/${rule.id}/test`, { csrf }],
      [`/console/alerts/${rule.id}/enabled`, { csrf, enabled: "false" }],
      [`/console/alerts/${rule.id}/channel`, { csrf, channel_type: "" }],
      [`/console/alerts/${rule.id}/delete`, { csrf }],
    ];
    for (const [path, form] of posts) {
      const res = await consoleFetch(path, { cookie: asReader.cookie, form });
      expect(res.status, path).toBe(403);
      expect(res.text).toContain("This page needs an admin key");
    }
    const after = await call("GET", `/v1/alerts/${rule.id}`, { key: p.key });
    expect(after.json.data).toMatchObject({ enabled: true, channels: [{ type: "webhook" }] });
    expect((await rules(p.key)).map((r) => r.name)).not.toContain("Mine");
    expect((await call("GET", `/v1/alerts/${rule.id}/firings`, { key: p.key })).json.data).toHaveLength(1);

    const writer = await createScopedKey(p.id, ["ingest"]);
    const asWriter = await signIn(writer.key);
    const shut = await consoleFetch("/console/alerts", { cookie: asWriter.cookie });
    expect(shut.status).toBe(403);
    expect(shut.text).not.toContain('href="/console/alerts"');
    expect((await consoleFetch(`/console/alerts/${rule.id}`, { cookie: asWriter.cookie })).status).toBe(403);
  });
});
