import { describe, expect, it } from "vitest";
// @ts-expect-error plain JavaScript: the same check the event page's script runs in the browser.
import { parsePublicKeys, verifyReceipt } from "../../src/client/receipt-check.js";
import { call, createProject, createScopedKey, ingestMany, until } from "../helpers";
import { consoleFetch, signIn } from "./console-helpers";
import { plural, relativeTime, utcText } from "../../src/pages/console/layout";
import { CHART_MAX_EVENTS, fromEvents, fromRollups, type Activity } from "../../src/pages/console/events-page";
import { ago, plan, purgeSteps } from "../storage/retention-helpers";
import { eraseApplied } from "../chain/erasure-helpers";
import { waitForJob } from "../jobs/job-helpers";

const HOSTILE = `<script>alert("x")</script><img src=x onerror=alert(1)>`;

describe("console pages", () => {
  it("lists, filters and searches events, renders hostile text as text, under a strict CSP", async () => {
    const p = await createProject();
    const stored = await ingestMany(p.key, [
      { action: "user.login", actor: { id: "u1", name: HOSTILE }, occurred_at: "2026-03-10T09:00:00.000Z" },
      { action: "invoice.paid", organization: "acme", targets: [{ type: "invoice", id: "i1", name: HOSTILE }], metadata: { note: HOSTILE }, occurred_at: "2026-03-10T10:00:00.000Z" },
      { action: "user.logout", actor: { id: "u2", name: "Bo Searchable" }, occurred_at: "2026-03-10T11:00:00.000Z" },
    ]);
    const { cookie } = await signIn(p.key);
    const all = await consoleFetch("/console/events", { cookie });
    expect(all.status).toBe(200);
    const csp = all.headers.get("Content-Security-Policy")!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain("unsafe-inline");
    expect(all.headers.get("Cache-Control")).toBe("no-store");
    // Only script tags with a src of our own; no inline script, no inline style.
    expect(all.text.match(/<script[^>]*>/g)).toEqual(['<script type="module" src="/console/assets/events.js">']);
    expect(all.text).not.toMatch(/<style|style="/);
    expect(all.text).not.toContain("<script>alert");
    expect(all.text).not.toContain("<img src=x");
    expect(all.text).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
    expect([...all.text.matchAll(/class="action">([^<]+)</g)].map((m) => m[1])).toEqual(["user.logout", "invoice.paid", "user.login"]);

    const filtered = await consoleFetch("/console/events?organization=acme&actions=invoice.paid,user.login", { cookie });
    expect([...filtered.text.matchAll(/class="action">([^<]+)</g)].map((m) => m[1])).toEqual(["invoice.paid"]);
    expect(filtered.text).toContain('value="acme"');
    const searched = await consoleFetch("/console/events?q=searchable", { cookie });
    expect([...searched.text.matchAll(/class="action">([^<]+)</g)].map((m) => m[1])).toEqual(["user.logout"]);
    const paged = await consoleFetch("/console/events?limit=2", { cookie });
    const next = /href="(\/console\/events\?[^"]*cursor=[^"]+)" rel="next"/.exec(paged.text)![1].replaceAll("&amp;", "&");
    const second = await consoleFetch(next, { cookie });
    expect([...second.text.matchAll(/class="action">([^<]+)</g)].map((m) => m[1])).toEqual(["user.login"]);
    const bad = await consoleFetch("/console/events?date_from=yesterday", { cookie });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("date_from must be an ISO 8601 timestamp");

    const detail = await consoleFetch(`/console/events/${stored[1].id}`, { cookie });
    expect(detail.status).toBe(200);
    expect(detail.text).not.toContain("<img src=x");
    expect(detail.text).toContain("&lt;img src=x onerror=alert(1)&gt;");
    for (const field of [stored[1].hash, stored[1].prev_hash, stored[1].signature, `#${stored[1].seq}`, `/receipts/${stored[1].id}`]) expect(detail.text).toContain(field);
    expect(detail.text).toContain(`data-hash="${stored[1].hash}"`);
    expect(detail.text).toContain("checked in this browser");
  });

  it("answers 404 for another project's event, and the script API keeps to the session's project", async () => {
    const mine = await createProject();
    const theirs = await createProject();
    const [foreign] = await ingestMany(theirs.key, [{ action: "secret.thing" }]);
    await ingestMany(mine.key, [{ action: "my.thing" }]);
    const { cookie } = await signIn(mine.key);
    const page = await consoleFetch(`/console/events/${foreign.id}`, { cookie });
    expect(page.status).toBe(404);
    expect(page.text).not.toContain("secret.thing");
    const api = await consoleFetch(`/console/api/v1/events/${foreign.id}/receipt`, { cookie });
    expect(api.status).toBe(404);
    const list = JSON.parse((await consoleFetch("/console/api/v1/events", { cookie })).text);
    expect(list.data.map((e: any) => e.action)).toEqual(["my.thing"]);
  });

  it("gives the event page's browser check a receipt that fails once the row is tampered with in D1", async () => {
    const p = await createProject();
    const [event] = await ingestMany(p.key, [{ action: "payment.approved" }, { action: "payment.sent" }]);
    const { cookie } = await signIn(p.key);
    const keys = parsePublicKeys((await consoleFetch("/.well-known/witness-keys.json")).text);
    const before = await consoleFetch(`/console/api/v1/events/${event.id}/receipt`, { cookie });
    expect(await verifyReceipt(before.text, keys)).toMatchObject({ ok: true, tlog: { ok: true, index: 0 } });
    await p.db.prepare("UPDATE events SET action = 'payment.denied' WHERE id = ?").bind(event.id).run();
    const page = await consoleFetch(`/console/events/${event.id}`, { cookie });
    expect(page.text).toContain("payment.denied");
    const after = await consoleFetch(`/console/api/v1/events/${event.id}/receipt`, { cookie });
    const check = await verifyReceipt(after.text, keys);
    expect(check.ok).toBe(false);
    expect(check.reason).toMatch(/Witness found this event or its chain links altered/);
  });

  it("follows the key's scopes: ingest-only cannot read, read sees no admin pages, admin sees keys", async () => {
    const p = await createProject();
    const ingestOnly = await createScopedKey(p.id, ["ingest"]);
    const reader = await createScopedKey(p.id, ["read"]);
    const asIngest = await signIn(ingestOnly.key);
    const refused = await consoleFetch("/console/events", { cookie: asIngest.cookie });
    expect(refused.status).toBe(403);
    expect(refused.text).toContain("This key cannot read");
    expect(refused.text).not.toContain('href="/console/integrity"');

    const asReader = await signIn(reader.key);
    const events = await consoleFetch("/console/events", { cookie: asReader.cookie });
    expect(events.text).toContain('href="/console/integrity"');
    expect(events.text).not.toContain('href="/console/keys"');
    const keys = await consoleFetch("/console/keys", { cookie: asReader.cookie });
    expect(keys.status).toBe(403);
    expect(keys.text).toContain("This page needs an admin key");
    const streams = await consoleFetch("/console/streams", { cookie: asReader.cookie });
    expect(streams.status).toBe(200);
    expect(streams.text).toContain("Creating, pausing, replaying and deleting streams needs an admin key.");
    const create = await consoleFetch("/console/streams", { cookie: asReader.cookie, form: { csrf: asReader.csrf, type: "webhook", url: "https://example.com/hook" } });
    expect(create.status).toBe(403);

    const asAdmin = await signIn(p.key);
    const adminKeys = await consoleFetch("/console/keys", { cookie: asAdmin.cookie });
    expect(adminKeys.status).toBe(200);
    expect(adminKeys.text).toContain(reader.prefix);
    const made = await consoleFetch("/console/keys", { cookie: asAdmin.cookie, form: { csrf: asAdmin.csrf, scopes: ["read"], label: HOSTILE } });
    expect(made.status).toBe(200);
    expect(made.text).toMatch(/<code class="secret" id="new-key">wtn_live_[A-Za-z0-9]+_[A-Za-z0-9]+<\/code>/);
    expect(made.text).not.toContain("<img src=x");
  });

  it("shows the log's size, checkpoint and the monitor command on the integrity page", async () => {
    const p = await createProject();
    await ingestMany(p.key, [{ action: "a.b" }, { action: "c.d" }]);
    const { cookie } = await signIn(p.key);
    const page = await consoleFetch("/console/integrity", { cookie });
    expect(page.status).toBe(200);
    expect(page.text).toMatch(/npm run log:monitor -- https:\/\/witness\.test\/logs\/[^ ]+ --vkey [^<]+/);
    expect(page.text).toMatch(/2 events in the signed tree/);
    expect(page.text).toContain("No verify has run yet.");
    const retention = await consoleFetch("/console/retention", { cookie });
    expect(retention.text).toContain("No rules: every event is kept forever.");
    const exportsPage = await consoleFetch("/console/exports", { cookie });
    expect(exportsPage.text).toContain("No export yet.");
  });

  it("says counts with their noun in agreement and times as words with the exact UTC time beside them", () => {
    expect([0, 1, 2, 1204].map((n) => plural(n, "event"))).toEqual(["0 events", "1 event", "2 events", "1,204 events"]);
    expect(plural(1, "matching event")).toBe("1 matching event");
    expect(plural(3, "gap record")).toBe("3 gap records");
    const now = Date.parse("2026-03-10T12:00:00.000Z");
    const at = (ms: number) => new Date(now - ms).toISOString();
    expect(relativeTime(at(10_000), now)).toBe("just now");
    expect(relativeTime(at(3 * 60_000), now)).toBe("3 min ago");
    expect(relativeTime(at(3_600_000), now)).toBe("1 hour ago");
    expect(relativeTime(at(5 * 3_600_000), now)).toBe("5 hours ago");
    expect(relativeTime(at(2 * 86_400_000), now)).toBe("2 days ago");
    expect(relativeTime(at(-5 * 86_400_000), now)).toBe("in 5 days");
    expect(relativeTime(at(400 * 86_400_000), now)).toBe("1 year ago");
    expect(utcText("2026-03-10T09:05:03.120Z")).toBe("2026-03-10 09:05:03 UTC");
    expect(utcText("not a time")).toBe("not a time");
  });

  it("shows every event time as a <time> with its exact UTC time, folds the filters behind a summary that counts them", async () => {
    const p = await createProject();
    const occurred = new Date(Date.now() - 3 * 60_000).toISOString();
    const [e] = await ingestMany(p.key, [{ action: "user.login", occurred_at: occurred, organization: "acme" }]);
    const { cookie } = await signIn(p.key);
    const page = await consoleFetch("/console/events", { cookie });
    expect(page.text).toContain(`<time datetime="${occurred}" title="${utcText(occurred)}">3 min ago</time>`);
    expect(page.text).toContain("<caption>1 event, newest first</caption>");
    // One control for the filters, closed (events.js opens it on a wide screen); the form works without a script.
    expect(page.text).toMatch(/<details class="filter-box" id="filters"><summary>Filters <span class="muted">\(none active\)<\/span><\/summary><form method="get" action="\/console\/events"/);
    const filtered = await consoleFetch("/console/events?organization=acme&actions=user.login,user.logout&limit=5", { cookie });
    expect(filtered.text).toContain("Filters <span class=\"muted\">(2 active: organization, any of actions)</span>");
    // The event's own page writes the exact time out too.
    const detail = await consoleFetch(`/console/events/${e.id}`, { cookie });
    expect(detail.text).toContain(`<time datetime="${occurred}" title="${utcText(occurred)}">3 min ago</time><span class="exact"> (${utcText(occurred)})</span>`);
    // Jobs and keys say their times the same way.
    const keys = await consoleFetch("/console/keys", { cookie });
    expect(keys.text).toMatch(/<td data-label="Created" class="when"><time datetime="[^"]+" title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC">(just now|\d+ min ago)<\/time><\/td>/);
    expect(keys.text).toContain("<caption>1 key, newest first (never their secrets)</caption>");
  });

  it("links each actor, organization and target to its investigation page, hostile ids escaped in the address and shown as text", async () => {
    const p = await createProject();
    const actor = `a/b"><img src=x onerror=alert(1)>`;
    const org = "org/1&x=<b>";
    const target = { type: "doc/x", id: "d/1?x=<i>" };
    const [e] = await ingestMany(p.key, [{ action: "doc.shared", actor: { id: actor }, organization: org, targets: [target] }]);
    const { cookie } = await signIn(p.key);
    const actorHref = `/console/actor?id=${encodeURIComponent(actor)}`;
    const orgHref = `/console/organization?id=${encodeURIComponent(org)}`;
    const targetHref = `/console/target?type=${encodeURIComponent(target.type)}&amp;id=${encodeURIComponent(target.id)}`;
    for (const path of ["/console/events", `/console/events/${e.id}`]) {
      const page = await consoleFetch(path, { cookie });
      expect(page.text, path).toContain(`href="${actorHref}"`);
      expect(page.text, path).toContain(`href="${orgHref}"`);
      expect(page.text, path).toContain(`href="${targetHref}"`);
      expect(page.text, path).toContain("a/b&quot;&gt;&lt;img src=x onerror=alert(1)&gt;");
      expect(page.text, path).toContain("org/1&amp;x=&lt;b&gt;");
      expect(page.text, path).not.toContain("<img src=x");
      expect(page.text, path).not.toContain("<i>");
    }
    // The addresses round-trip: the investigation page's query reads back the very ids.
    const url = new URL(`https://x${targetHref.replaceAll("&amp;", "&")}`);
    expect([url.searchParams.get("type"), url.searchParams.get("id")]).toEqual([target.type, target.id]);
    expect(new URL(`https://x${actorHref}`).searchParams.get("id")).toBe(actor);
  });

  it("charts what the table's question matches: rollups without filters, the events themselves for a search or an organization, with a caption that says which", async () => {
    const p = await createProject();
    const recent = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString();
    await ingestMany(p.key, [
      { action: "invoice.paid", organization: "acme", occurred_at: recent(30) },
      { action: "invoice.paid", organization: "acme", occurred_at: recent(90) },
      { action: "user.login", organization: "globex", occurred_at: recent(100) },
      // Outside the chart's week, so the project's total is larger than the chart's.
      { action: "user.login", organization: "acme", occurred_at: new Date(Date.now() - 20 * 86_400_000).toISOString() },
    ]);
    const { cookie } = await signIn(p.key);
    const chartOf = (html: string) => JSON.parse(/data-chart="([^"]*)"/.exec(html)![1].replaceAll("&quot;", '"').replaceAll("&amp;", "&"));
    const words = (html: string) => /<figcaption id="activity-caption">([\s\S]*?)<\/figcaption>/.exec(html)![1].replace(/<[^>]+>/g, "");

    const all = await consoleFetch("/console/events", { cookie });
    expect(words(all.text)).toMatch(/^3 events in the last 7 days; 4 recorded in the project in all\. Counts from hourly rollups/);
    expect(all.text).toMatch(/<button type="button" class="series" data-series="0" aria-pressed="false"><span class="swatch c0" aria-hidden="true"><\/span><span class="name">invoice\.paid<\/span> <span class="n">2<\/span><\/button>/);
    expect(all.text).toContain('<span class="name">user.login</span> <span class="n">1</span>');
    expect(all.text).not.toMatch(/invoice\.paid:/);
    const rolled = chartOf(all.text);
    expect(rolled.unit).toBe("hour");
    expect(rolled.series.map((s: any) => [s.label, s.counts.reduce((a: number, b: number) => a + b, 0)])).toEqual([["invoice.paid", 2], ["user.login", 1]]);

    // An action filter the rollups can answer.
    const paid = await consoleFetch("/console/events?action=invoice.paid", { cookie });
    expect(words(paid.text)).toMatch(/^2 matching events in the last 7 days; 4 recorded in the project in all\. Counts from hourly rollups/);
    // An organization (or a search) they cannot: counted from the events, and said so.
    const acme = await consoleFetch("/console/events?organization=acme", { cookie });
    expect(words(acme.text)).toMatch(/^2 matching events in the last 7 days; 4 recorded in the project in all\. Counted from the matching events themselves/);
    expect(chartOf(acme.text).series.map((s: any) => s.label)).toEqual(["invoice.paid"]);
    const searched = await consoleFetch("/console/events?q=login", { cookie });
    expect(words(searched.text)).toMatch(/^1 matching event in the last 7 days; .*Counted from the matching events themselves/);
    // Dates set the chart's range too.
    const from = new Date(Date.now() - 25 * 86_400_000).toISOString();
    const month = await consoleFetch(`/console/events?date_from=${encodeURIComponent(from)}`, { cookie });
    expect(words(month.text)).toMatch(/^4 events since 25 days ago; 4 recorded in the project in all\./);
    expect(month.text).toContain('Show the last 7 days</a>');
  });

  it("counts from the rollups only what they can tell apart, and from at most the first events otherwise", () => {
    const activity: Activity = {
      bucket: "hour",
      from: "2026-03-10T00:00:00.000Z",
      to: "2026-03-10T02:59:59.999Z",
      starts: ["2026-03-10T00:00:00.000Z", "2026-03-10T01:00:00.000Z", "2026-03-10T02:00:00.000Z"],
      series: [
        { action: "a", total: 5, counts: [2, 2, 1] },
        { action: "b", total: 2, counts: [0, 1, 1] },
      ],
      other: [0, 1, 0],
      total: 8,
    };
    expect(fromRollups(activity, {})!.series.map((s) => [s.label, s.total])).toEqual([["a", 5], ["b", 2], ["other actions", 1]]);
    expect(fromRollups(activity, { action: "b" })).toMatchObject({ source: "rollups", total: 2, series: [{ label: "b", counts: [0, 1, 1] }] });
    expect(fromRollups(activity, { actions_exclude: "a" })).toMatchObject({ total: 3 });
    // "c" hides in "other", which is not empty: only the events can say.
    expect(fromRollups(activity, { action: "c" })).toBeNull();
    expect(fromRollups(activity, { actions_exclude: "c" })).toBeNull();
    expect(fromRollups({ ...activity, other: [0, 0, 0] }, { action: "c" })).toMatchObject({ total: 0, series: [] });

    const range = { from: "2026-03-09T00:00:00.000Z", to: "2026-03-10T02:30:00.000Z", recent: false, toNow: false };
    const events = [
      { action: "a", occurred_at: "2026-03-10T02:10:00.000Z" },
      { action: "a", occurred_at: "2026-03-10T01:10:00.000Z" },
      { action: "b", occurred_at: "2026-03-10T00:10:00.000Z" },
    ];
    const whole = fromEvents(events, range, false);
    expect(whole).toMatchObject({ source: "sample", unit: "hour", start: "2026-03-09T00:00:00.000Z", total: 3, more: false, countedFrom: null });
    expect(whole.series[0].counts).toHaveLength(27);
    // More matched than were counted: the chart starts at the oldest one counted, so no bar it draws misses events.
    const cut = fromEvents(events, range, true);
    expect(cut).toMatchObject({ start: "2026-03-10T00:00:00.000Z", more: true, countedFrom: "2026-03-10T00:10:00.000Z" });
    expect(cut.series.map((s) => [s.label, s.counts])).toEqual([["a", [0, 1, 1]], ["b", [1, 0, 0]]]);
    expect(CHART_MAX_EVENTS).toBe(1000);
  });

  it("accounts on the integrity page for every leaf of the signed tree: checked, erased and purged add up to its size", { timeout: 120_000 }, async () => {
    const p = await createProject();
    await ingestMany(p.key, [
      ...Array.from({ length: 3 }, (_, i) => ({ action: "debug.trace", occurred_at: ago(40), metadata: { i } })),
      { action: "doc.read", actor: { id: "u_gone", name: "Gone", email: "gone@example.com" } },
      { action: "doc.read", actor: { id: "u_kept" } },
    ]);
    await plan(p.key, [{ pattern: "debug.*", days: 30 }]);
    expect((await purgeSteps(p.id)).purged).toBe(3);
    await eraseApplied(p.key, "/v1/actors/u_gone");
    // Verify against a tree that holds every event so far, so the counts meet its size exactly.
    const log = await until(async () => {
      const info = (await call("GET", "/v1/log", { key: p.key })).json.data;
      return info.tree_size === info.head_seq ? info : null;
    });
    const job = await waitForJob(p.key, (await call("POST", "/v1/jobs", { key: p.key, body: { type: "verify" } })).json.data.id, [], 90_000);
    expect(job.result).toMatchObject({ ok: true, anonymized: 1, checkpoint: { tree_size: log.tree_size } });
    const { cookie } = await signIn(p.key);
    const page = await consoleFetch("/console/integrity", { cookie });
    const row = new RegExp(`<tr id="job-${job.id}">([\\s\\S]*?)</tr>`).exec(page.text)![1];
    const lines = [...row.matchAll(/<li[^>]*>([^<]*)<\/li>/g)].map((m) => m[1].replaceAll("&#39;", "'"));
    const checked = log.tree_size - 1 - 3;
    expect(row).toContain(`Intact: all ${log.tree_size} events in the signed tree accounted for`);
    expect(lines).toEqual([
      `${checked} checked: hash, signature, chain link and log leaf`,
      "+ 1 with personal data erased: checked against the ledger's erasure record",
      "+ 3 in retention gaps (1 signed gap record): purged under the retention plan",
      `= ${log.tree_size} events in the signed tree`,
    ]);

    // An incremental verify lists only the gaps crossed since its checkpoint, and counts the earlier ones, so its numbers add up too.
    await ingestMany(p.key, [{ action: "doc.read", actor: { id: "u_new" } }]);
    const later = await until(async () => {
      const info = (await call("GET", "/v1/log", { key: p.key })).json.data;
      return info.tree_size === info.head_seq && info.tree_size > log.tree_size ? info : null;
    });
    const since = await waitForJob(p.key, (await call("POST", "/v1/jobs", { key: p.key, body: { type: "verify", since: "checkpoint" } })).json.data.id, [], 90_000);
    expect(since.result).toMatchObject({ ok: true, gaps: [], purged_before_checkpoint: 3 });
    const r = since.result;
    expect(r.verified + r.unsigned + r.anonymized + r.purged_before_checkpoint).toBe(later.tree_size);
    const again = await consoleFetch("/console/integrity", { cookie });
    const sinceRow = new RegExp(`<tr id="job-${since.id}">([\\s\\S]*?)</tr>`).exec(again.text)![1];
    expect(sinceRow).toContain(`Intact: all ${later.tree_size} events in the signed tree accounted for`);
  });
});
