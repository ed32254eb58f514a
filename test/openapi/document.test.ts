import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { defaultHook } from "../../src/middleware/openapi";
import { ApiError } from "../../src/lib/errors";
import app from "../../src/app";
import committed from "../../src/client/openapi.json";
import { call, createProject, ingest, openApiDocument } from "../helpers";
import { check, checkResponse } from "./contract";

/** The document's templates of the one tile handler (GET /logs/:logId/tile/*): full and partial tiles. */
const TILE_TEMPLATES = ["/logs/{logId}/tile/{level}/{index}", "/logs/{logId}/tile/{level}/{index}.p/{width}"];

/** app.routes as the document spells paths: handlers only (ALL is middleware or a catch-all), :id -> {id}. */
function appOperations(): string[] {
  const ops = new Set<string>();
  for (const r of app.routes) {
    if (r.method === "ALL") continue;
    const path = r.path.replace(/:([A-Za-z_]+)/g, "{$1}").replace(/(.)\/$/, "$1");
    for (const p of path === "/logs/{logId}/tile/*" ? TILE_TEMPLATES : [path]) ops.add(`${r.method} ${p}`);
  }
  return [...ops].sort();
}

describe("GET /openapi.json", () => {
  it("is an OpenAPI 3.1 document", async () => {
    // The full OpenAPI 3.1 schema check (@seriousme/openapi-schema-validator) runs in Node, on the
    // committed copy that the next test holds equal to this one: `npm run client:types -- --check`
    // (.ci/run). It needs ajv, which compiles validators with new Function: workerd refuses that.
    const res = await call("GET", "/openapi.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toMatch(/^application\/json/);
    expect(res.json.openapi).toBe("3.1.0");
    expect(res.json.info.title).toBe("Witness API");
  });

  it("documents every route of the app, and no route the app lacks", async () => {
    const doc = await openApiDocument();
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`))
      .sort();
    const hint =
      "each route needs documented(router, createRoute({ ... })) next to its handler, on a router() from src/middleware/openapi.ts; " +
      "then npm run client:types";
    expect(appOperations(), hint).toEqual(documented);
  });

  it("has one error envelope with the closed code catalogue, the auth schemes and the rate-limit headers", async () => {
    const doc = await openApiDocument();
    expect(doc.components.schemas.ErrorCode.enum).toEqual([
      "VALIDATION_ERROR", "UNAUTHORIZED", "FORBIDDEN", "NOT_FOUND", "LOG_NOT_READY", "RETENTION_LOCKED", "LEGAL_HOLD", "CONFLICT", "EVENT_TOO_LARGE",
      "IDEMPOTENCY_KEY_REUSED", "QUERY_TOO_BROAD", "ARCHIVE_DAMAGED", "UNSUPPORTED_MEDIA_TYPE", "RANGE_NOT_SATISFIABLE", "RATE_LIMITED", "INTERNAL_ERROR",
    ]);
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(["ApiKey", "EmbedToken"]);
    expect(Object.keys(doc.components.headers).sort()).toEqual(["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After"]);
    const list = doc.paths["/v1/events"].get;
    expect(list.security).toEqual([{ ApiKey: ["read"] }, { EmbedToken: [] }]);
    expect(list.responses["429"].headers["Retry-After"]).toBeDefined();
    expect(list.responses["400"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/ErrorResponse" });
    expect(doc.paths["/v1/receipts/{id}"].get.security).toEqual([]);
  });

  it("is the one the typed client was generated from (else: npm run client:types)", async () => {
    expect(await openApiDocument()).toEqual(committed);
  });

  it("is built once per isolate", async () => {
    await call("GET", "/openapi.json");
    const build = vi.spyOn(app, "getOpenAPI31Document");
    const [a, b] = await Promise.all([call("GET", "/openapi.json"), call("GET", "/openapi.json")]);
    expect(build).not.toHaveBeenCalled();
    expect(a.text).toBe(b.text);
    build.mockRestore();
  });
});

describe("defaultHook of every router", () => {
  it("turns a zod-openapi validation failure into the one 400 envelope", () => {
    const result = z.object({ limit: z.string().regex(/^\d+$/, "limit must be a whole number") }).safeParse({ limit: "x" });
    let thrown: unknown;
    try {
      defaultHook({ ...result, target: "query" } as never, {} as never);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ApiError);
    expect(thrown).toMatchObject({ code: "VALIDATION_ERROR", status: 400, message: "limit: limit must be a whole number", details: { issues: [{ path: "limit", message: "limit must be a whole number" }] } });
  });
});

describe("the contract check", () => {
  it("refuses a body that is not the documented one, and an undocumented status", async () => {
    const doc = await openApiDocument();
    const event = doc.components.schemas.Event;
    expect(check(doc, event, { id: "x" })).not.toEqual([]);
    const ok = (await ingest((await createProject()).key, { action: "a.b" })).json.data;
    expect(check(doc, event, ok)).toEqual([]);
    expect(check(doc, event, { ...ok, seq: "1" })).toEqual(["$.seq: expected integer, got string"]);
    // Every response field is declared: a field the document does not name is refused, a map (metadata) holds any key.
    expect(check(doc, event, { ...ok, internal: 1 })).toEqual(["$.internal: not declared in the document"]);
    expect(check(doc, event, { ...ok, metadata: { any: { key: 1 } } })).toEqual([]);
    const page = { method: "GET", path: "/v1/events", contentType: "application/json" };
    expect(() => checkResponse(doc, { ...page, status: 200, text: '{"data":[{"id":1}],"nextCursor":null}' })).toThrow(/does not match/);
    expect(() => checkResponse(doc, { ...page, status: 418, text: "{}" })).toThrow(/not in the OpenAPI document/);
    expect(() => checkResponse(doc, { ...page, status: 200, contentType: "text/html", text: "<p>" })).toThrow(/answered text\/html/);
  });
});

describe("GET /docs", () => {
  it("is the reference page: own script, no inline script, strict CSP", async () => {
    const res = await call("GET", "/docs");
    expect(res.status).toBe(200);
    const csp = res.headers.get("Content-Security-Policy")!;
    expect(csp).toContain("script-src 'self';");
    expect(csp).toContain("connect-src 'self';");
    expect(csp).toContain("default-src 'none'");
    expect(res.text).toContain('<script src="/docs/scalar.js"></script>');
    expect(res.text).toContain('data-url="/openapi.json"');
  });
});
