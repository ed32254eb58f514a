import { describe, expect, it } from "vitest";
import { call, createProject, createScopedKey, ingest } from "../helpers";

const selfAudit = async (key: string, action: string) =>
  (await call("GET", `/v1/events?action=${action}`, { key })).json.data as any[];

describe("the keys API", () => {
  it("an admin mints an ingest-only key for an app: shown once, listed without its secret, and recorded in the chain", async () => {
    const p = await createProject();
    const res = await call("POST", "/v1/keys", { key: p.key, body: { scopes: ["ingest"], label: "checkout service" } });
    expect(res.status).toBe(201);
    const created = res.json.data;
    expect(created).toMatchObject({ scopes: ["ingest"], label: "checkout service", expires_at: null, revoked_at: null, created_by: p.prefix });
    expect(created.key).toMatch(new RegExp(`^wtn_live_${created.prefix}_[A-Za-z0-9]+$`));

    // The new key sends events and does nothing else.
    expect((await ingest(created.key, { action: "order.paid" })).status).toBe(201);
    expect((await call("GET", "/v1/events", { key: created.key })).status).toBe(403);
    expect((await call("PUT", "/v1/retention", { key: created.key, body: { rules: [{ pattern: "*", days: 1 }] } })).status).toBe(403);

    const list = await call("GET", "/v1/keys", { key: p.key });
    expect(list.status).toBe(200);
    const listed = list.json.data.find((k: any) => k.prefix === created.prefix);
    expect(listed).toEqual({ prefix: created.prefix, scopes: ["ingest"], label: "checkout service", created_at: created.created_at, expires_at: null, revoked_at: null, created_by: p.prefix });
    expect(list.text).not.toContain(created.key.split("_").at(-1));

    const [audit] = await selfAudit(p.key, "witness.key.created");
    expect(audit).toMatchObject({ actor: { type: "api_key", id: p.prefix }, targets: [{ type: "api_key", id: created.prefix, name: "checkout service" }], metadata: { scopes: ["ingest"] } });
    expect(JSON.stringify(audit)).not.toContain(created.key.split("_").at(-1));
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 2 });
  });

  it("revoking a key stops it at once here, is recorded once, and a second revoke changes nothing", async () => {
    const p = await createProject();
    const app = (await call("POST", "/v1/keys", { key: p.key, body: { scopes: ["ingest", "read"] } })).json.data;
    expect((await call("GET", "/v1/events", { key: app.key })).status).toBe(200);
    const revoked = await call("DELETE", `/v1/keys/${app.prefix}`, { key: p.key });
    expect(revoked.status).toBe(200);
    expect(revoked.json.data.revoked_at).toEqual(expect.any(String));
    const refused = await call("GET", "/v1/events", { key: app.key });
    expect(refused.status).toBe(401);
    expect(refused.json.error.message).toMatch(/revoked/);
    expect((await call("DELETE", `/v1/keys/${app.prefix}`, { key: p.key })).json.data.revoked_at).toBe(revoked.json.data.revoked_at);
    expect(await selfAudit(p.key, "witness.key.revoked")).toHaveLength(1);
  });

  it("expires_at in the past, unknown scopes, an empty scope list and an overlong label are clear 400s; nothing is created", async () => {
    const p = await createProject();
    const cases: Array<[unknown, string]> = [
      [{ scopes: ["ingest"], expires_at: "2020-01-01T00:00:00Z" }, "expires_at"],
      [{ scopes: ["ingest"], expires_at: "tomorrow" }, "expires_at"],
      [{ scopes: ["superuser"] }, "scopes.0"],
      [{ scopes: [] }, "scopes"],
      [{ scopes: ["read"], label: "x".repeat(101) }, "label"],
      [{ scopes: ["read"], owner: "me" }, ""],
    ];
    for (const [body, path] of cases) {
      const res = await call("POST", "/v1/keys", { key: p.key, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.error.code).toBe("VALIDATION_ERROR");
      expect(res.json.error.details.issues[0].path).toBe(path);
    }
    expect((await call("GET", "/v1/keys", { key: p.key })).json.data).toHaveLength(1);
  });

  it("a key that expires stops working when it expires", async () => {
    const p = await createProject();
    const soon = new Date(Date.now() + 1500).toISOString();
    const made = (await call("POST", "/v1/keys", { key: p.key, body: { scopes: ["read"], expires_at: soon } })).json.data;
    expect(made.expires_at).toBe(soon);
    expect((await call("GET", "/v1/events", { key: made.key })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1600));
    const res = await call("GET", "/v1/events", { key: made.key });
    expect(res.status).toBe(401);
    expect(res.json.error.message).toMatch(/expired/);
  });

  it("only admins manage keys, and another project's key prefix is 404", async () => {
    const p = await createProject();
    const q = await createProject();
    const reader = await createScopedKey(p.id, ["read", "ingest"]);
    const res = await call("POST", "/v1/keys", { key: reader.key, body: { scopes: ["read"] } });
    expect(res.status).toBe(403);
    expect(res.json.error.details.required_scope).toBe("admin");
    expect((await call("DELETE", `/v1/keys/${q.prefix}`, { key: p.key })).status).toBe(404);
    expect((await call("GET", "/v1/events", { key: q.key })).status).toBe(200);
  });
});
