/**
 * Issue 37, item 3: the customers' admin portal. A one-time link for one
 * organization opens an hour's session that reads that organization's events
 * only, downloads its export, and reaches nothing else.
 */
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, createProject, createScopedKey, ingestMany, until } from "../helpers";
import { consoleFetch } from "../pages/console-helpers";
import { Network, webhookBody } from "../streams/receiver";

async function link(key: string, body: Record<string, unknown>) {
  return call("POST", "/v1/portal/links", { key, body });
}

/** Opens a link as the start page's form does; the session cookie and its API bearer token. */
async function open(url: string) {
  const token = new URL(url).hash.slice(1);
  const res = await consoleFetch("/portal/start", { form: { token } });
  const cookie = (res.headers.get("Set-Cookie") ?? "").split(";")[0];
  return { res, cookie, bearer: `wtn_psess_${cookie.split("=")[1]}`, token };
}

async function seeded() {
  const project = await createProject();
  await ingestMany(project.key, [
    { action: "invoice.paid", organization: "org_acme", actor: { id: "u_ada", name: "<script>alert(1)</script>" } },
    { action: "invoice.paid", organization: "org_acme", actor: { id: "u_bob" } },
    { action: "secret.other", organization: "org_globex", actor: { id: "u_eve" } },
    { action: "secret.none", actor: { id: "u_sys" } },
  ]);
  return project;
}

describe("portal links", () => {
  it("an admin key mints a one-time link whose code rides in the fragment; ingest and read keys cannot", async () => {
    const project = await createProject();
    const made = await link(project.key, { organization: "org_acme", abilities: ["events", "exports"] });
    expect(made.status).toBe(201);
    expect(made.json.data).toMatchObject({ organization: "org_acme", abilities: ["events", "exports"] });
    expect(made.json.data.url).toMatch(/^https:\/\/witness\.test\/portal\/start#[A-Za-z0-9_-]{43}$/);
    const hours = (Date.parse(made.json.data.expires_at) - Date.parse(made.json.data.created_at)) / 3_600_000;
    expect(hours).toBe(24);
    for (const scope of ["ingest", "read"] as const) {
      const { key } = await createScopedKey(project.id, [scope]);
      expect((await link(key, { organization: "org_acme", abilities: ["events"] })).status).toBe(403);
    }
  });

  it("refuses bad input naming the field", async () => {
    const project = await createProject();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ organization: "org", abilities: ["events", "admin"] }, "abilities.1"],
      [{ organization: "org", abilities: [] }, "abilities"],
      [{ organization: "", abilities: ["events"] }, "organization"],
      [{ organization: "org", abilities: ["events"], ttl_seconds: 5 }, "ttl_seconds"],
      [{ organization: "org", abilities: ["events"], ttl_seconds: 8 * 86_400 }, "ttl_seconds"],
      [{ organization: "org", abilities: ["events"], extra: 1 }, ""],
    ];
    for (const [body, path] of cases) {
      const res = await link(project.key, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.error.details.issues.map((i: { path: string }) => i.path)).toContain(path);
    }
  });

  it("opens once: a second opening and an expired link are refused, and nothing is spent by reading the start page", async () => {
    const project = await createProject();
    const made = await link(project.key, { organization: "org_acme", abilities: ["events"] });
    expect((await consoleFetch("/portal/start")).status).toBe(200);
    const first = await open(made.json.data.url);
    expect(first.res.status).toBe(303);
    expect(first.res.headers.get("Location")).toBe("/portal/events");
    expect(first.res.headers.get("Set-Cookie")).toMatch(/wtn_portal=[^;]+; .*HttpOnly.*SameSite=Strict/i);
    const again = await consoleFetch("/portal/start", { form: { token: first.token } });
    expect(again.status).toBe(410);
    expect(again.text).toContain("already opened once");

    const late = await link(project.key, { organization: "org_acme", abilities: ["events"], ttl_seconds: 60 });
    await env.DB.prepare("UPDATE portal_links SET expires_at = ? WHERE id = ?").bind("2000-01-01T00:00:00.000Z", late.json.data.id).run();
    const expired = await open(late.json.data.url);
    expect(expired.res.status).toBe(410);
    expect(expired.res.text).toContain("expired");
    expect((await consoleFetch("/portal/start", { form: { token: "A".repeat(43) } })).status).toBe(404);
    // A POST from another site (login CSRF) opens nothing.
    const foreign = await link(project.key, { organization: "org_acme", abilities: ["events"] });
    const token = new URL(foreign.json.data.url).hash.slice(1);
    expect((await consoleFetch("/portal/start", { form: { token }, origin: "https://evil.example" })).status).toBe(403);
    expect((await open(foreign.json.data.url)).res.status).toBe(303);
  });
});

describe("a portal session", () => {
  it("shows its organization's events only, as text", async () => {
    const project = await seeded();
    const made = await link(project.key, { organization: "org_acme", abilities: ["events"] });
    const { cookie } = await open(made.json.data.url);
    const page = await consoleFetch("/portal/events", { cookie });
    expect(page.status).toBe(200);
    expect(page.text).toContain("invoice.paid");
    expect(page.text).not.toContain("secret.other");
    expect(page.text).not.toContain("secret.none");
    expect(page.text).not.toContain("<script>alert(1)</script>");
    expect(page.text).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    const searched = await consoleFetch("/portal/events?q=secret", { cookie });
    expect(searched.text).not.toContain("secret.other");
  });

  it("reaches the API only as its organization, and only on the routes its abilities name", async () => {
    const project = await seeded();
    const made = await link(project.key, { organization: "org_acme", abilities: ["events"] });
    const { bearer } = await open(made.json.data.url);
    const listed = await call("GET", "/v1/events", { key: bearer });
    expect(listed.status).toBe(200);
    expect(new Set(listed.json.data.map((e: { organization: string }) => e.organization))).toEqual(new Set(["org_acme"]));
    // The full event shape: the customer reads their own organization's events.
    expect(listed.json.data[0]).toHaveProperty("actor");
    expect((await call("GET", "/v1/events?organization=org_globex", { key: bearer })).json.data).toEqual([]);
    const all = await call("GET", "/v1/events", { key: project.key });
    const other = all.json.data.find((e: { action: string }) => e.action === "secret.other");
    expect((await call("GET", `/v1/events/${other.id}`, { key: bearer })).status).toBe(404);
    // The organization's events, and the record of its own portal link and session.
    const feed = await call("GET", "/v1/events/feed", { key: bearer });
    expect(feed.json.data.map((e: { action: string }) => e.action)).toEqual(["invoice.paid", "invoice.paid", "witness.portal.link_created", "witness.portal.session_started"]);
    for (const [method, path] of [
      ["GET", "/v1/keys"],
      ["GET", "/v1/events/verify"],
      ["GET", "/v1/exports"],
      ["GET", "/v1/streams"],
      ["POST", "/v1/portal/links"],
      ["GET", "/v1/alerts"],
      ["DELETE", "/v1/actors/u_ada"],
    ] as const) {
      const res = await call(method, path, { key: bearer, ...(method === "POST" ? { body: { organization: "org_x", abilities: ["events"] } } : {}) });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.json.error.code).toBe("FORBIDDEN");
    }
    expect((await call("POST", "/v1/events", { key: bearer, body: { action: "forged.event" } })).status).toBe(403);
  });

  it("downloads its organization's export, recorded in the chain with the session as actor", async () => {
    const project = await seeded();
    const made = await link(project.key, { organization: "org_acme", abilities: ["exports"] });
    const { cookie, res } = await open(made.json.data.url);
    expect(res.headers.get("Location")).toBe("/portal/export");
    const download = await consoleFetch("/portal/export/download?format=json", { cookie });
    expect(download.status).toBe(200);
    expect(download.headers.get("Content-Disposition")).toMatch(/attachment/);
    const rows = JSON.parse(download.text) as Array<{ action: string; organization: string }>;
    expect(new Set(rows.map((r) => r.organization))).toEqual(new Set(["org_acme"]));
    expect(rows.filter((r) => r.action === "invoice.paid")).toHaveLength(2);
    expect(rows.some((r) => r.action.startsWith("secret."))).toBe(false);
    const audit = await call("GET", "/v1/events?action=witness.portal.export_downloaded", { key: project.key });
    expect(audit.json.data).toHaveLength(1);
    expect(audit.json.data[0]).toMatchObject({ organization: "org_acme", actor: { id: made.json.data.id, type: "portal" } });
    const started = await call("GET", "/v1/events?action=witness.portal.session_started", { key: project.key });
    expect(started.json.data[0]).toMatchObject({ organization: "org_acme", actor: { id: made.json.data.id, type: "portal" } });
    const created = await call("GET", "/v1/events?action=witness.portal.link_created", { key: project.key });
    expect(created.json.data[0]).toMatchObject({ organization: "org_acme", actor: { type: "api_key", id: project.prefix } });
  });

  it("ends at sign-out and at its hour's end", async () => {
    const project = await seeded();
    const first = await open((await link(project.key, { organization: "org_acme", abilities: ["events"] })).json.data.url);
    const page = await consoleFetch("/portal/events", { cookie: first.cookie });
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)![1];
    expect((await consoleFetch("/portal/sign-out", { cookie: first.cookie, form: { csrf: "wrong" } })).status).toBe(403);
    expect((await consoleFetch("/portal/sign-out", { cookie: first.cookie, form: { csrf } })).status).toBe(200);
    expect((await consoleFetch("/portal/events", { cookie: first.cookie })).status).toBe(401);
    expect((await call("GET", "/v1/events", { key: first.bearer })).status).toBe(401);

    const made = await link(project.key, { organization: "org_acme", abilities: ["events"] });
    const second = await open(made.json.data.url);
    await env.DB.prepare("UPDATE portal_sessions SET expires_at = ? WHERE link_id = ?").bind("2000-01-01T00:00:00.000Z", made.json.data.id).run();
    const ended = await consoleFetch("/portal/events", { cookie: second.cookie });
    expect(ended.status).toBe(401);
    expect(ended.text).toContain("Ask your vendor for a new portal link");
  });
});

describe("a portal session's streams", () => {
  const HOST = "siem.acme-customer.com";
  let net: Network;
  let restore: () => void;
  beforeEach(() => {
    net = new Network();
    net.dns.set(HOST, ["93.184.216.34"]);
    net.dns.set("vendor-siem.example.com", ["93.184.216.35"]);
    restore = net.install();
  });
  afterEach(() => restore());

  it("creates, tests, pauses and deletes its own streams, always filtered to its organization, and never sees the vendor's", async () => {
    const project = await seeded();
    const vendor = await call("POST", "/v1/streams", { key: project.key, body: { type: "webhook", url: "https://vendor-siem.example.com/all" } });
    expect(vendor.status).toBe(201);
    const made = await link(project.key, { organization: "org_acme", abilities: ["streams"] });
    const { bearer, res } = await open(made.json.data.url);
    expect(res.headers.get("Location")).toBe("/portal/streams");

    // Another organization is refused by name; the organization is forced when absent.
    const foreign = await call("POST", "/v1/streams", { key: bearer, body: { type: "webhook", url: `https://${HOST}/hook`, filter: { organization: "org_globex" } } });
    expect(foreign.status).toBe(400);
    expect(foreign.json.error.details.issues[0].path).toBe("filter.organization");
    const created = await call("POST", "/v1/streams", { key: bearer, body: { type: "webhook", url: `https://${HOST}/hook`, format: "ocsf" } });
    expect(created.status).toBe(201);
    expect(created.json.data).toMatchObject({ filter: { organization: "org_acme" }, portal_organization: "org_acme", format: "ocsf" });
    expect(created.json.data.secret).toMatch(/^whsec_/);
    const id = created.json.data.id;

    // The portal lists its own stream only; the vendor sees both, and which one the customer made.
    expect((await call("GET", "/v1/streams", { key: bearer })).json.data.map((s: { id: string }) => s.id)).toEqual([id]);
    const all = (await call("GET", "/v1/streams", { key: project.key })).json.data;
    expect(all.map((s: { portal_organization: string | null }) => s.portal_organization).sort()).toEqual(["org_acme", null].sort());
    for (const [method, path] of [["GET", `/v1/streams/${vendor.json.data.id}`], ["DELETE", `/v1/streams/${vendor.json.data.id}`], ["POST", `/v1/streams/${vendor.json.data.id}/pause`]] as const) {
      expect((await call(method, path, { key: bearer })).status, `${method} ${path}`).toBe(404);
    }
    // Replay is the vendor's: it could send history the customer's link was not meant to reach back for.
    expect((await call("POST", `/v1/streams/${id}/replay`, { key: bearer, body: { from_seq: 1 } })).status).toBe(403);

    // A test event goes through the whole path to the customer's receiver, recorded in the chain with their organization.
    const tested = await call("POST", `/v1/streams/${id}/test`, { key: bearer });
    expect(tested.status).toBe(202);
    const delivered = await until(async () => net.at(HOST).flatMap((r) => webhookBody(r).events).find((e: any) => e.metadata?.uid === tested.json.data.event_id || e.api?.operation === "witness.stream.tested"));
    expect(delivered).toBeTruthy();
    // Only the organization's events reach it.
    await ingestMany(project.key, [{ action: "after.acme", organization: "org_acme" }, { action: "after.globex", organization: "org_globex" }]);
    await until(async () => net.at(HOST).some((r) => r.body.includes("after.acme")));
    expect(net.at(HOST).some((r) => r.body.includes("after.globex") || r.body.includes("secret.other"))).toBe(false);

    expect((await call("POST", `/v1/streams/${id}/pause`, { key: bearer })).json.data.status).toBe("paused");
    expect((await call("DELETE", `/v1/streams/${id}`, { key: bearer })).status).toBe(204);
    const audit = await call("GET", "/v1/events?action=witness.stream.created", { key: project.key });
    const portalMade = audit.json.data.find((e: { organization: string | null }) => e.organization === "org_acme");
    expect(portalMade).toMatchObject({ actor: { type: "portal", id: made.json.data.id } });
    for (const action of ["witness.stream.tested", "witness.stream.paused", "witness.stream.deleted"]) {
      const rows = (await call("GET", `/v1/events?action=${action}`, { key: project.key })).json.data;
      expect(rows[0], action).toMatchObject({ organization: "org_acme", actor: { type: "portal" } });
    }
  });

  it("works from the portal's own pages: the form creates a stream and shows its secret once, buttons pause and test it", async () => {
    const project = await seeded();
    const made = await link(project.key, { organization: "org_acme", abilities: ["streams"] });
    const { cookie } = await open(made.json.data.url);
    const page = await consoleFetch("/portal/streams", { cookie });
    expect(page.status).toBe(200);
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)![1];
    const bad = await consoleFetch("/portal/streams", { cookie, form: { csrf, type: "webhook", url: "http://127.0.0.1/x", format: "json" } });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("The stream was not created. url:");
    const created = await consoleFetch("/portal/streams", { cookie, form: { csrf, type: "webhook", url: `https://${HOST}/hook`, format: "json" } });
    expect(created.status).toBe(200);
    expect(created.text).toMatch(/whsec_[A-Za-z0-9+/=]+/);
    const id = /\/portal\/streams\/([^/]+)\/pause/.exec(created.text)![1];
    const paused = await consoleFetch(`/portal/streams/${id}/pause`, { cookie, form: { csrf } });
    expect(paused.status).toBe(303);
    expect(paused.headers.get("Location")).toBe("/portal/streams?done=paused");
    const after = await consoleFetch("/portal/streams?done=paused", { cookie });
    expect(after.text).toContain("The stream is paused");
    expect(after.text).not.toMatch(/whsec_/);
    expect((await consoleFetch(`/portal/streams/${id}/test`, { cookie, form: { csrf } })).status).toBe(303);
  });
});
