import { describe, expect, it } from "vitest";
// @ts-expect-error plain JavaScript: the same check the event page's script runs in the browser.
import { parsePublicKeys, verifyReceipt } from "../../src/client/receipt-check.js";
import { createProject, createScopedKey, ingestMany } from "../helpers";
import { consoleFetch, signIn } from "./console-helpers";

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
});
