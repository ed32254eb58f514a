import { env } from "cloudflare:workers";
import { createExecutionContext } from "cloudflare:test";
import { Hono } from "hono";
import { answerError } from "../../src/app";
import type { AppEnv } from "../../src/middleware/app-env";
import { describe, expect, it } from "vitest";
import { call, createProject, ingest } from "../helpers";

describe("authentication", () => {
  it("uses the test secrets from the vitest config, not a developer's .dev.vars", () => {
    expect(env.SIGNING_KEYS).toBe("1:test-signing-key-version-one");
  });

  it.each([
    ["no Authorization header", undefined],
    ["a non-Bearer scheme", "Basic dXNlcjpwYXNz"],
    ["a malformed key", "Bearer not-a-key"],
    ["an unknown prefix", "Bearer wtn_live_AAAAAAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"],
  ])("answers 401 in the envelope for %s", async (_name, header) => {
    const res = await call("POST", "/v1/events", { body: { action: "a" }, headers: header ? { Authorization: header } : {} });
    expect(res.status).toBe(401);
    expect(res.json.error.code).toBe("UNAUTHORIZED");
    expect(res.json.error.details).toEqual({});
    const read = await call("GET", "/v1/events/00000000-0000-0000-0000-000000000000", { headers: header ? { Authorization: header } : {} });
    expect(read.status).toBe(401);
  });

  it("refuses a key whose secret is wrong even with a real prefix", async () => {
    const p = await createProject();
    const forged = `wtn_live_${p.prefix}_${"A".repeat(32)}`;
    const res = await ingest(forged, { action: "a" });
    expect(res.status).toBe(401);
    expect(res.json.error.message).toBe("The API key is not valid");
  });

  it("stores only a SHA-256 of the secret, never the key", async () => {
    const p = await createProject();
    const row = await env.DB.prepare("SELECT * FROM api_keys WHERE prefix = ?").bind(p.prefix).first<Record<string, string>>();
    const secret = p.key.split("_")[3];
    expect(Object.values(row!).some((v) => typeof v === "string" && v.includes(secret))).toBe(false);
    expect(row!.secret_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it("refuses a revoked key with 401", async () => {
    const p = await createProject();
    await env.DB.prepare("UPDATE api_keys SET revoked_at = ? WHERE prefix = ?").bind(new Date().toISOString(), p.prefix).run();
    const res = await ingest(p.key, { action: "after" });
    expect(res.status).toBe(401);
    expect(res.json.error.message).toMatch(/revoked/);
    expect((await call("GET", "/v1/events/x", { key: p.key })).status).toBe(401);
  });
});

describe("project isolation", () => {
  it("writes to the key's project and never reads another project's event", async () => {
    const a = await createProject();
    const b = await createProject();
    const created = await ingest(a.key, { action: "secret.thing", actor: { id: "u1", email: "x@a.test" } });
    expect(created.json.data.project_id).toBe(a.id);
    const own = await call("GET", `/v1/events/${created.json.data.id}`, { key: a.key });
    expect(own.status).toBe(200);
    expect(own.json.data).toEqual(created.json.data);
    const foreign = await call("GET", `/v1/events/${created.json.data.id}`, { key: b.key });
    expect(foreign.status).toBe(404);
    expect(foreign.json.error.code).toBe("NOT_FOUND");
    // Chains are per project: b's first event starts a chain of its own.
    const first = await ingest(b.key, { action: "b.first" });
    expect(first.json.data.prev_hash).toBeNull();
    expect(first.json.data.seq).toBe(1);
  });
});

describe("errors", () => {
  it("answers unknown routes and ids with 404 in the envelope", async () => {
    const p = await createProject();
    const route = await call("GET", "/v1/nothing-here", { key: p.key });
    expect(route.status).toBe(404);
    expect(route.json.error).toEqual({ code: "NOT_FOUND", message: "No such route", details: {} });
    const id = await call("GET", "/v1/events/00000000-0000-0000-0000-000000000000", { key: p.key });
    expect(id.status).toBe(404);
  });

  it("turns an unexpected failure into a 500 envelope without internals", async () => {
    const p = await createProject();
    await p.db.exec("CREATE TRIGGER boom_500 BEFORE INSERT ON events WHEN NEW.action = 'explode.now' BEGIN SELECT RAISE(ABORT, 'secret sql detail'); END");
    try {
      const res = await ingest(p.key, { action: "explode.now" });
      expect(res.status).toBe(500);
      expect(res.json.error.code).toBe("INTERNAL_ERROR");
      expect(res.text).not.toMatch(/secret sql detail|SQLITE|at .*\.ts/);
      expect(res.json.error.details.request_id).toBeTruthy();
    } finally {
      await p.db.exec("DROP TRIGGER boom_500");
    }
  });

  it("answers 429 with Retry-After, not a 500, when the project's database is full, stores nothing, and goes on when space is back", async () => {
    const p = await createProject();
    const first = await ingest(p.key, { action: "before.full" });
    expect(first.status).toBe(201);
    // Local D1 has no size limit (and refuses PRAGMA max_page_count), so a trigger refuses the write with the
    // message D1 gives at its 10 GB limit: "D1_ERROR: Exceeded maximum DB size".
    await p.db.exec("CREATE TRIGGER full_shard BEFORE INSERT ON events WHEN NEW.action = 'while.full' BEGIN SELECT RAISE(ABORT, 'Exceeded maximum DB size'); END");
    try {
      const res = await call("POST", "/v1/events/batch", { key: p.key, body: { events: [{ action: "while.full" }, { action: "while.full" }] } });
      expect(res.status).toBe(429);
      expect(res.headers.get("Retry-After")).toBe("60");
      expect(res.json.error).toMatchObject({ code: "RATE_LIMITED", details: { reason: "storage_full", retry_after: 60 } });
      expect(res.json.error.message).toMatch(/full .*nothing was stored, retry in 60 s/);
      expect(res.text).not.toMatch(/SQLITE|D1_ERROR/);
    } finally {
      await p.db.exec("DROP TRIGGER full_shard");
    }
    const listed = await call("GET", "/v1/events?action=while.full", { key: p.key });
    expect(listed.json.data).toEqual([]);
    // The chain goes on from the last stored event: the refused commit left no seq behind.
    const next = await ingest(p.key, { action: "after.full" });
    expect(next.status).toBe(201);
    expect(next.json.data.seq).toBe(2);
    expect(next.json.data.prev_hash).toBe(first.json.data.hash);
  });

  it("answers 429 with Retry-After, not a 500, when the runtime finds a Durable Object overloaded (the call never reached it)", async () => {
    // What Cloudflare's runtime throws from a stub whose object has too many requests queued (local workerd never does),
    // through the service's own error handler.
    const probe = new Hono<AppEnv>()
      .get("/probe", () => {
        throw Object.assign(new Error("Durable Object is overloaded. Too many requests queued."), { overloaded: true });
      })
      .onError(answerError);
    const res = await probe.request("https://witness.test/probe", {}, env, createExecutionContext());
    expect(res.status).toBe(429);
    expect(res.headers.get("Retry-After")).toBe("5");
    const body = (await res.json()) as { error: { code: string; message: string; details: unknown } };
    expect(body.error).toMatchObject({ code: "RATE_LIMITED", details: { reason: "overloaded", retry_after: 5 } });
    expect(body.error.message).toMatch(/overloaded and refused it; nothing was stored, retry in 5 s/);
  });
});
