import { env } from "cloudflare:workers";
import { sign } from "hono/jwt";
import { describe, expect, it } from "vitest";
import { mintEmbedToken } from "../../src/auth/embed-token";
import { call, createProject, ingest } from "../helpers";

async function embedToken(key: string, body: unknown = {}) {
  const res = await call("POST", "/v1/embed/token", { key, body });
  expect(res.status).toBe(201);
  return res.json.data.token as string;
}

function b64url(value: unknown): string {
  return btoa(JSON.stringify(value)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

describe("POST /v1/embed/token", () => {
  it("mints a 15-minute token by default, not cacheable", async () => {
    const p = await createProject();
    const before = Date.now();
    const res = await call("POST", "/v1/embed/token", { key: p.key, body: {} });
    expect(res.status).toBe(201);
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    const { token, expires_at, organization, include_metadata, fields } = res.json.data;
    expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(organization).toBeNull();
    expect(include_metadata).toBe(false);
    expect(fields).toMatch(/actor\.email, ip_address and user_agent .*null.*metadata/);
    const ttl = (Date.parse(expires_at) - before) / 1000;
    expect(ttl).toBeGreaterThan(895);
    expect(ttl).toBeLessThanOrEqual(901);
  });

  it("accepts an empty POST without a body as the defaults", async () => {
    const p = await createProject();
    const res = await call("POST", "/v1/embed/token", { key: p.key });
    expect(res.status).toBe(201);
    expect(res.json.data.organization).toBeNull();
  });

  it("binds an organization and honours ttl_seconds at both bounds", async () => {
    const p = await createProject();
    for (const ttl of [60, 3600]) {
      const res = await call("POST", "/v1/embed/token", { key: p.key, body: { organization: "org_a", ttl_seconds: ttl } });
      expect(res.status).toBe(201);
      expect(res.json.data.organization).toBe("org_a");
      expect(Math.round((Date.parse(res.json.data.expires_at) - Date.now()) / 1000)).toBeGreaterThan(ttl - 5);
      expect(Math.round((Date.parse(res.json.data.expires_at) - Date.now()) / 1000)).toBeLessThanOrEqual(ttl);
    }
  });

  it.each([
    ["ttl_seconds above one hour", { ttl_seconds: 3601 }, "ttl_seconds"],
    ["ttl_seconds under a minute", { ttl_seconds: 59 }, "ttl_seconds"],
    ["ttl_seconds zero", { ttl_seconds: 0 }, "ttl_seconds"],
    ["fractional ttl_seconds", { ttl_seconds: 90.5 }, "ttl_seconds"],
    ["ttl_seconds as a string", { ttl_seconds: "900" }, "ttl_seconds"],
    ["an empty organization", { organization: "" }, "organization"],
    ["an organization over 128 characters", { organization: "o".repeat(129) }, "organization"],
    ["an unknown field", { project: "other" }, ""],
    ["include_metadata as a string", { include_metadata: "true" }, "include_metadata"],
  ])("refuses %s with 400", async (_name, body, path) => {
    const p = await createProject();
    const res = await call("POST", "/v1/embed/token", { key: p.key, body });
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe("VALIDATION_ERROR");
    expect(res.json.error.details.issues[0].path).toBe(path);
  });

  it("wants JSON when there is a body", async () => {
    const p = await createProject();
    const res = await call("POST", "/v1/embed/token", { key: p.key, body: "ttl=60", headers: { "Content-Type": "text/plain" } });
    expect(res.status).toBe(415);
  });

  it("needs an API key: 401 without one, 403 for an embed token", async () => {
    expect((await call("POST", "/v1/embed/token", { body: {} })).status).toBe(401);
    const p = await createProject();
    const token = await embedToken(p.key);
    const res = await call("POST", "/v1/embed/token", { key: token, body: {} });
    expect(res.status).toBe(403);
    expect(res.json.error.code).toBe("FORBIDDEN");
  });
});

describe("embed tokens on the reads", () => {
  it("read one event of the project; an organization token hides other organizations' events", async () => {
    const p = await createProject();
    const mine = (await ingest(p.key, { action: "doc.read", organization: "org_a" })).json.data;
    const theirs = (await ingest(p.key, { action: "doc.read", organization: "org_b" })).json.data;
    const none = (await ingest(p.key, { action: "system.tick" })).json.data;
    const narrowed = await embedToken(p.key, { organization: "org_a" });
    // The reduced shape: the request's address and browser and the metadata are withheld.
    expect((await call("GET", `/v1/events/${mine.id}`, { key: narrowed })).json.data).toEqual({ ...mine, ip_address: null, user_agent: null, metadata: null });
    expect((await call("GET", `/v1/events/${theirs.id}`, { key: narrowed })).status).toBe(404);
    expect((await call("GET", `/v1/events/${none.id}`, { key: narrowed })).status).toBe(404);
    const wide = await embedToken(p.key);
    expect((await call("GET", `/v1/events/${theirs.id}`, { key: wide })).status).toBe(200);
  });

  it("cannot read other users' e-mail, address, browser or metadata through list, search and get", async () => {
    const p = await createProject();
    const secrets = { email: "victim@private.example", ip: "198.51.100.77", ua: "VictimBrowser/9.9", meta: "s3cr3t-plan" };
    const actor = { id: "u_victim", type: "user", name: "Victor Victim", email: secrets.email };
    const stored = (await ingest(p.key, { action: "doc.read", organization: "org_a", actor, metadata: { plan: secrets.meta } }, {
      ip: secrets.ip, headers: { "User-Agent": secrets.ua },
    })).json.data;
    expect(stored).toMatchObject({ ip_address: secrets.ip, user_agent: secrets.ua, actor: { email: secrets.email } });
    const reads = [`/v1/events`, `/v1/events/search?q=victor`, `/v1/events/${stored.id}`];
    const read = async (token: string) => {
      const events = [];
      for (const path of reads) {
        const res = await call("GET", path, { key: token });
        expect(res.status, path).toBe(200);
        expect(res.text, path).not.toContain(secrets.email);
        expect(res.text, path).not.toContain(secrets.ip);
        expect(res.text, path).not.toContain(secrets.ua);
        events.push(...(Array.isArray(res.json.data) ? res.json.data : [res.json.data]));
      }
      expect(events).toHaveLength(3);
      return events;
    };
    // Same shape as an API key's, with the withheld values null.
    const reduced = { ...stored, actor: { ...actor, email: null }, ip_address: null, user_agent: null };
    const plain = await read(await embedToken(p.key, { organization: "org_a" }));
    for (const e of plain) expect(e).toEqual({ ...reduced, metadata: null });
    const withMetadata = await read(await embedToken(p.key, { organization: "org_a", include_metadata: true }));
    for (const e of withMetadata) expect(e).toEqual({ ...reduced, metadata: { plan: secrets.meta } });
    // The API key still reads everything.
    expect((await call("GET", `/v1/events/${stored.id}`, { key: p.key })).json.data).toEqual(stored);
  });

  it("say what they withhold when minted", async () => {
    const p = await createProject();
    const res = await call("POST", "/v1/embed/token", { key: p.key, body: { include_metadata: true } });
    expect(res.status).toBe(201);
    expect(res.json.data).toMatchObject({ organization: null, include_metadata: true, fields: expect.stringContaining("metadata") });
  });

  it("never reads another project's event", async () => {
    const a = await createProject();
    const b = await createProject();
    const event = (await ingest(a.key, { action: "doc.read", organization: "org_a" })).json.data;
    const token = await embedToken(b.key, { organization: "org_a" });
    expect((await call("GET", `/v1/events/${event.id}`, { key: token })).status).toBe(404);
  });

  it("forces the token's organization on list and search, whatever the query asks", async () => {
    const p = await createProject();
    await ingest(p.key, { action: "invoice.paid", organization: "org_a", actor: { id: "u_a", name: "Ann" } });
    await ingest(p.key, { action: "invoice.paid", organization: "org_b", actor: { id: "u_b", name: "Ann" } });
    const token = await embedToken(p.key, { organization: "org_a" });
    for (const path of ["/v1/events", "/v1/events/search?q=invoice", "/v1/events/search?q=ann"]) {
      const res = await call("GET", path, { key: token });
      expect(res.status).toBe(200);
      expect(res.json.data.map((e: { organization: string }) => e.organization)).toEqual(["org_a"]);
    }
    for (const path of ["/v1/events?organization=org_b", "/v1/events/search?q=invoice&organization=org_b"]) {
      const res = await call("GET", path, { key: token });
      expect(res.status).toBe(200);
      expect(res.json.data).toEqual([]);
    }
  });

  it("are refused with 403 everywhere else", async () => {
    const p = await createProject();
    const event = (await ingest(p.key, { action: "doc.read" })).json.data;
    const token = await embedToken(p.key);
    const refused: Array<[string, string, unknown?]> = [
      ["POST", "/v1/events", { action: "forged" }],
      ["POST", "/v1/events/batch", { events: [{ action: "forged" }] }],
      ["GET", "/v1/events/verify"],
      ["GET", `/v1/events/${event.id}/receipt`],
      ["GET", "/v1/exports?format=json"],
      ["DELETE", "/v1/actors/u_1"],
      ["POST", "/v1/embed/token", {}],
      ["HEAD", "/v1/events"],
      ["GET", "/v1/some-future-endpoint"],
    ];
    for (const [method, path, body] of refused) {
      const res = await call(method, path, { key: token, body });
      expect({ method, path, status: res.status }).toEqual({ method, path, status: 403 });
    }
    const { results } = await p.db.prepare("SELECT action FROM events WHERE project_id = ?").bind(p.id).all();
    expect(results).toEqual([{ action: "doc.read" }]);
  });

  it("refuses expired, tampered, foreign and revoked tokens with 401", async () => {
    const p = await createProject();
    const other = await createProject();
    const event = (await ingest(p.key, { action: "doc.read", organization: "org_a" })).json.data;
    const now = Math.floor(Date.now() / 1000);
    const claims = { aud: "witness:embed", sub: p.id, key: p.prefix, org: "org_a", iat: now, exp: now + 600 };
    const good = await sign(claims, env.EMBED_TOKEN_SECRET, "HS256");
    expect((await call("GET", `/v1/events/${event.id}`, { key: good })).status).toBe(200);

    const [header, , signature] = good.split(".");
    const expired = (await mintEmbedToken(env, { projectId: p.id, keyPrefix: p.prefix, organization: "org_a" }, 60, Date.now() - 120_000)).token;
    const bad: Array<[string, string]> = [
      ["expired", expired],
      ["payload swapped, signature kept", `${header}.${b64url({ ...claims, org: null })}.${signature}`],
      ["include_metadata granted, signature kept", `${header}.${b64url({ ...claims, meta: true })}.${signature}`],
      ["signature flipped", good.slice(0, -2) + (good.endsWith("AA") ? "BA" : "AA")],
      ["signed with another secret", await sign(claims, "another-secret-of-some-other-deployment", "HS256")],
      ["alg none", `${b64url({ alg: "none", typ: "JWT" })}.${b64url(claims)}.`],
      ["no exp", await sign({ ...claims, exp: undefined }, env.EMBED_TOKEN_SECRET, "HS256")],
      ["another audience", await sign({ ...claims, aud: "something-else" }, env.EMBED_TOKEN_SECRET, "HS256")],
      ["key of another project", await sign({ ...claims, key: other.prefix }, env.EMBED_TOKEN_SECRET, "HS256")],
      ["garbage", "not.a.token"],
    ];
    for (const [name, token] of bad) {
      const res = await call("GET", `/v1/events/${event.id}`, { key: token });
      expect({ name, status: res.status, code: res.json.error.code }).toEqual({ name, status: 401, code: "UNAUTHORIZED" });
      // The feed says what went wrong: only a genuine token past its time is "expired"; an altered one is never called that.
      expect({ name, reason: res.json.error.details.reason }).toEqual({ name, reason: name === "expired" ? "expired" : "invalid" });
    }
    // An expired token that was also altered is invalid, not expired: the signature is checked first.
    const [eh, , es] = expired.split(".");
    const alteredExpired = await call("GET", "/v1/events", { key: `${eh}.${b64url({ ...claims, exp: now - 60 })}.${es}` });
    expect(alteredExpired.json.error.details.reason).toBe("invalid");

    // Revoking the minting key revokes its tokens (within the key cache's 10 s, like the key itself).
    const revoked = await createProject();
    await env.DB.prepare("UPDATE api_keys SET revoked_at = ? WHERE prefix = ?").bind(new Date().toISOString(), revoked.prefix).run();
    const orphan = await sign({ ...claims, sub: revoked.id, key: revoked.prefix }, env.EMBED_TOKEN_SECRET, "HS256");
    const refused = await call("GET", "/v1/events", { key: orphan });
    expect(refused.status).toBe(401);
    expect(refused.json.error).toMatchObject({ message: "The API key that minted this embed token has been revoked", details: { reason: "key_revoked" } });
  });

  it("are never taken from the URL", async () => {
    const p = await createProject();
    const event = (await ingest(p.key, { action: "doc.read" })).json.data;
    const token = await embedToken(p.key);
    for (const name of ["token", "access_token", "embed_token"]) {
      expect((await call("GET", `/v1/events/${event.id}?${name}=${token}`)).status).toBe(401);
    }
  });
});

describe("CORS for the embed reads", () => {
  const origin = "https://customer.example";

  it("answers the preflight of the three reads, allowing GET with Authorization", async () => {
    for (const path of ["/v1/events", "/v1/events/search", "/v1/events/0b5c3c52-0000-4000-8000-000000000000"]) {
      const res = await call("OPTIONS", path, {
        headers: { Origin: origin, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization" },
      });
      expect(res.status).toBe(204);
      expect(res.headers.get("Access-Control-Allow-Origin")).toBe("*");
      expect(res.headers.get("Access-Control-Allow-Methods")).toBe("GET");
      expect(res.headers.get("Access-Control-Allow-Headers")).toBe("Authorization");
    }
  });

  it("lets the browser read successes and 401s, and exposes the rate-limit headers", async () => {
    const p = await createProject();
    const event = (await ingest(p.key, { action: "doc.read" })).json.data;
    const token = await embedToken(p.key);
    const ok = await call("GET", `/v1/events/${event.id}`, { key: token, headers: { Origin: origin } });
    expect(ok.headers.get("Access-Control-Allow-Origin")).toBe("*");
    expect(ok.headers.get("Access-Control-Expose-Headers")).toContain("RateLimit-Remaining");
    const denied = await call("GET", `/v1/events/${event.id}`, { key: "expired.or.bad", headers: { Origin: origin } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get("Access-Control-Allow-Origin")).toBe("*");
  });

  it("is absent from every other endpoint", async () => {
    const p = await createProject();
    const write = await call("POST", "/v1/events", { key: p.key, body: { action: "a" }, headers: { Origin: origin } });
    expect(write.status).toBe(201);
    expect(write.headers.get("Access-Control-Allow-Origin")).toBeNull();
    for (const path of ["/v1/events/batch", "/v1/actors/u_1", "/v1/embed/token", "/v1/events/verify"]) {
      const res = await call("OPTIONS", path, { headers: { Origin: origin, "Access-Control-Request-Method": "POST" } });
      expect(res.headers.get("Access-Control-Allow-Origin")).toBeNull();
    }
    const preflight = await call("OPTIONS", "/v1/events", { headers: { Origin: origin, "Access-Control-Request-Method": "POST" } });
    expect(preflight.headers.get("Access-Control-Allow-Methods")).toBe("GET");
  });
});
