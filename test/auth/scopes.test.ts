import { describe, expect, it } from "vitest";
import app from "../../src/app";
import { SCOPES, type Scope } from "../../src/auth/scopes";
import { call, createProject, createScopedKey, openApiDocument } from "../helpers";

const METHODS = ["get", "post", "put", "patch", "delete"] as const;

/** Every operation of the document that takes an API key, with the scope it names. */
async function keyedOperations() {
  const doc = await openApiDocument();
  const ops: Array<{ method: string; path: string; id: string; security: Array<Record<string, string[]>> }> = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (op && (op.security ?? doc.security ?? []).some((s: Record<string, string[]>) => "ApiKey" in s)) ops.push({ method, path, id: op.operationId, security: op.security });
    }
  }
  return ops;
}

const requiredScope = (security: Array<Record<string, string[]>>) => security.find((s) => "ApiKey" in s)!.ApiKey;

describe("scoped API keys on every route", () => {
  it("every /v1 route is in the OpenAPI document, and every operation taking a key names exactly one scope", async () => {
    const doc = await openApiDocument();
    const documented = new Set(Object.entries<any>(doc.paths).flatMap(([path, item]) => METHODS.filter((m) => item[m]).map((m) => `${m} ${path}`)));
    const routes = app.routes
      .filter((r) => r.path.startsWith("/v1/") && METHODS.includes(r.method.toLowerCase() as any))
      .map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:([A-Za-z_]+)/g, "{$1}").replace(/\/$/, "")}`);
    for (const route of routes) expect(documented, `${route} is served but not documented`).toContain(route);
    const ops = await keyedOperations();
    expect(ops.length).toBeGreaterThan(20);
    for (const op of ops) {
      const scopes = requiredScope(op.security);
      expect(scopes, `${op.id} names no single scope`).toHaveLength(1);
      expect(SCOPES, `${op.id} names an unknown scope`).toContain(scopes[0]);
    }
  });

  it("each operation refuses keys without its scope (403, details.required_scope) and lets the others past", async () => {
    const p = await createProject();
    const keys: Record<Scope, string> = {
      ingest: (await createScopedKey(p.id, ["ingest"])).key,
      read: (await createScopedKey(p.id, ["read"])).key,
      admin: (await createScopedKey(p.id, ["admin"])).key,
    };
    const holds: Record<Scope, Scope[]> = { ingest: ["ingest"], read: ["read"], admin: ["ingest", "read", "admin"] };
    const refused: string[] = [];
    const passed: string[] = [];
    for (const op of await keyedOperations()) {
      const needed = requiredScope(op.security)[0] as Scope;
      const path = op.path.replace(/\{[^}]+\}/g, "not-a-real-id");
      const body = op.method === "get" || op.method === "delete" ? undefined : {};
      // Keys without the scope first: nothing they ask may happen.
      for (const held of SCOPES.filter((s) => !holds[s].includes(needed))) {
        const res = await call(op.method.toUpperCase(), path, { key: keys[held], body });
        expect(res.status, `${op.id} with a ${held} key`).toBe(403);
        expect(res.json.error.code).toBe("FORBIDDEN");
        expect(res.json.error.details.required_scope).toBe(needed);
        refused.push(`${op.id}:${held}`);
      }
      for (const held of SCOPES.filter((s) => holds[s].includes(needed))) {
        const res = await call(op.method.toUpperCase(), path, { key: keys[held], body });
        expect(res.status, `${op.id} with a ${held} key: ${res.text.slice(0, 200)}`).not.toBe(403);
        passed.push(`${op.id}:${held}`);
      }
    }
    // The application's key: it sends events and nothing else.
    expect(passed.filter((x) => x.endsWith(":ingest")).sort()).toEqual(["createEvent:ingest", "createEventBatch:ingest"]);
    expect(refused).toContain("setRetention:ingest");
    expect(refused).toContain("setRetention:read");
    expect(refused).toContain("eraseActor:read");
    expect(refused).toContain("createStream:ingest");
    expect(refused).toContain("listEvents:ingest");
  }, 60_000);

  it("an expired key is refused with 401 saying when it expired", async () => {
    const p = await createProject();
    const { key } = await createScopedKey(p.id, ["read"], { expiresAt: "2020-01-01T00:00:00.000Z" });
    const res = await call("GET", "/v1/events", { key });
    expect(res.status).toBe(401);
    expect(res.json.error.message).toMatch(/expired at 2020-01-01T00:00:00.000Z/);
  });

  it("an ingest-only key cannot mint embed tokens (they read)", async () => {
    const p = await createProject();
    const ingestOnly = await createScopedKey(p.id, ["ingest"]);
    const mint = await call("POST", "/v1/embed/token", { key: ingestOnly.key, body: {} });
    expect(mint.status).toBe(403);
    expect(mint.json.error.details.required_scope).toBe("read");
  });
});
