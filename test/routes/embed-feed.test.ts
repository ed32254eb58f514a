import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import app from "../../src/app";
import { call, createProject, createScopedKey, ingest } from "../helpers";

/** The worker with EMBED_DEMO_PROJECT set, as `wrangler dev --var` would. */
async function demo(url: string, projectId: string) {
  const ctx = createExecutionContext();
  const res = await app.fetch(new Request(url, { headers: { "CF-Connecting-IP": "10.9.9.9" } }), { ...env, EMBED_DEMO_PROJECT: projectId }, ctx);
  await waitOnExecutionContext(ctx);
  return { status: res.status, headers: res.headers, text: await res.text() };
}

describe("GET /embed/feed.js", () => {
  it("serves the custom element as JavaScript with an ETag and a cache lifetime", async () => {
    const res = await call("GET", "/embed/feed.js");
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("text/javascript; charset=utf-8");
    expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
    expect(res.headers.get("Cache-Control")).toMatch(/^public, max-age=\d+/);
    expect(res.headers.get("Cross-Origin-Resource-Policy")).toBe("cross-origin");
    expect(res.headers.get("ETag")).toMatch(/^"[^"]+"$/);
    expect(res.text).toContain('customElements.define("witness-feed"');
    expect(res.text.length).toBeLessThan(17_000);
  });

  it("answers 304 without a body when the browser already has this version", async () => {
    const first = await call("GET", "/embed/feed.js");
    const etag = first.headers.get("ETag")!;
    const again = await call("GET", "/embed/feed.js", { headers: { "If-None-Match": etag } });
    expect(again.status).toBe(304);
    expect(again.text).toBe("");
    expect(again.headers.get("ETag")).toBe(etag);
    expect(again.headers.get("Cache-Control")).toBe(first.headers.get("Cache-Control"));
    const stale = await call("GET", "/embed/feed.js", { headers: { "If-None-Match": '"an-older-version"' } });
    expect(stale.status).toBe(200);
    expect(stale.text).toBe(first.text);
  });

  it("never builds markup from strings and never evaluates code", async () => {
    const { text } = await call("GET", "/embed/feed.js");
    expect(text).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function|setAttribute\("style"|\.style\./);
  });

  it("needs no credential and is not under /v1", async () => {
    const res = await call("GET", "/embed/feed.js", { key: "wtn_live_AAAAAAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB" });
    expect(res.status).toBe(200);
  });
});

describe("what the feed reads with an embed token", () => {
  const TEMPLATE = "{actor.name|actor.id} changed {targets.user.name}'s role from {changes.role.before} to {changes.role.after}";

  it("carries the display sentence on list and search, and changes only for a token minted with include_metadata", async () => {
    const p = await createProject();
    // Straight to the worker, not through call(): the catalog's answer is the catalog tests' to check, not this one's.
    const put = new Request("http://localhost/v1/schemas/user.role_changed", {
      method: "PUT",
      headers: { Authorization: `Bearer ${p.key}`, "Content-Type": "application/json", "CF-Connecting-IP": "10.9.9.8" },
      body: JSON.stringify({ display: TEMPLATE }),
    });
    const ctx = createExecutionContext();
    expect((await app.fetch(put, env, ctx)).status).toBe(201);
    await waitOnExecutionContext(ctx);
    const changes = [{ field: "role", before: "viewer", after: "admin" }, { field: "mfa", after: true }];
    await ingest(p.key, { action: "user.role_changed", actor: { id: "u_ada", name: "Ada" }, targets: [{ type: "user", id: "u_bob", name: "Bob" }], changes });
    // Without include_metadata the sentence is rendered without the changes too, so it cannot leak them.
    const cases = [
      { include_metadata: true, display: "Ada changed Bob's role from viewer to admin", changes },
      { include_metadata: false, display: "Ada changed Bob's role from  to ", changes: null },
    ];
    for (const { include_metadata, ...expected } of cases) {
      const token = (await call("POST", "/v1/embed/token", { key: p.key, body: { include_metadata } })).json.data.token;
      for (const path of ["/v1/events?limit=5", "/v1/events/search?q=role_changed&limit=5"]) {
        const [event] = (await call("GET", path, { key: token })).json.data;
        expect(event, `${path}, include_metadata ${include_metadata}`).toMatchObject({ action: "user.role_changed", ...expected });
      }
    }
  });
});

describe("GET /embed/demo", () => {
  it("does not exist unless EMBED_DEMO_PROJECT is set", async () => {
    const res = await call("GET", "/embed/demo");
    expect(res.status).toBe(404);
    expect(res.json.error.code).toBe("NOT_FOUND");
  });

  it("on localhost, shows the feed with a fresh embed token for the demo project, under a strict CSP", async () => {
    const p = await createProject();
    const event = (await ingest(p.key, { action: "demo.opened", organization: "org_a" })).json.data;
    const res = await demo("http://localhost:8787/embed/demo?organization=org_a", p.id);
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toMatch(/^text\/html/);
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    const csp = res.headers.get("Content-Security-Policy")!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toMatch(/style-src 'sha256-[A-Za-z0-9+/]+={0,2}'/);
    expect(res.text).toContain('<script src="/embed/feed.js" defer></script>');
    expect(res.text).toContain('base-url="http://localhost:8787"');
    const token = /token="([^"]+)"/.exec(res.text)![1];
    const read = await call("GET", `/v1/events/${event.id}`, { key: token });
    expect(read.status).toBe(200);
    const writeAttempt = await call("POST", "/v1/events", { key: token, body: { action: "x" } });
    expect(writeAttempt.status).toBe(403);
  });

  it("escapes what it echoes", async () => {
    const p = await createProject();
    const res = await demo(`http://localhost/embed/demo?organization=${encodeURIComponent('"><script>alert(1)</script>')}`, p.id);
    expect(res.status).toBe(200);
    expect(res.text).not.toContain("<script>alert(1)");
    expect(res.text).toContain("&lt;script&gt;alert(1)");
  });

  it("is not served on any other host", async () => {
    const p = await createProject();
    expect((await demo("https://witness.example.com/embed/demo", p.id)).status).toBe(404);
  });

  it("mints from the newest key that can read, not from a newer ingest-only one", async () => {
    const p = await createProject();
    const event = (await ingest(p.key, { action: "demo.read" })).json.data;
    // Its admin key revoked, so the reader below is the only key that may mint.
    await env.DB.prepare("UPDATE api_keys SET revoked_at = ? WHERE prefix = ?").bind(new Date().toISOString(), p.prefix).run();
    const reader = await createScopedKey(p.id, ["read"]);
    // The README's first step: an ingest-only key for the app's servers, now the project's newest (and one expired reader).
    await createScopedKey(p.id, ["read"], { expiresAt: "2020-01-01T00:00:00.000Z" });
    await createScopedKey(p.id, ["ingest"]);
    const res = await demo("http://localhost/embed/demo", p.id);
    expect(res.status).toBe(200);
    expect(res.text).toContain(`minted from the key <code>${reader.prefix}</code> (read), the project's newest that can read`);
    const token = /token="([^"]+)"/.exec(res.text)![1];
    expect((await call("GET", `/v1/events/${event.id}`, { key: token })).status).toBe(200);
  });

  it("says plainly when the project has no key that can read, and how to make one", async () => {
    const p = await createProject();
    // The project's own admin key revoked: only an ingest key is left.
    await env.DB.prepare("UPDATE api_keys SET revoked_at = ? WHERE prefix = ?").bind(new Date().toISOString(), p.prefix).run();
    await createScopedKey(p.id, ["ingest"]);
    for (const projectId of [p.id, "no-such-project"]) {
      const res = await demo("http://localhost/embed/demo", projectId);
      expect(res.status).toBe(409);
      expect(res.headers.get("Content-Type")).toMatch(/^text\/html/);
      expect(res.headers.get("Content-Security-Policy")).toContain("script-src 'none'");
      expect(res.text).toContain(`Project <code>${projectId}</code> has no live API key that can read events`);
      expect(res.text).toContain(`npm run keys:create -- ${projectId} --scope read`);
      expect(res.text).not.toContain("<witness-feed");
      expect(res.text).not.toContain("<script");
    }
  });
});
