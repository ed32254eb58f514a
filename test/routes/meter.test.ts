import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import app from "../../src/app";
import { LIMITS } from "../../src/lib/meter";
import { call, createProject, ingest } from "../helpers";

type Row = { invocation: string; d1Queries: number; subrequests: number };
const report = async (): Promise<Row[]> => {
  const res = await call("GET", "/__meter");
  expect(res.status).toBe(200);
  expect(res.json.data.limits).toEqual(LIMITS);
  return res.json.data.invocations;
};

/** The app itself (not the metered entry point) with METER set as given: what a deployment without the meter serves. */
async function plain(meter: string, method: string, path: string) {
  const ctx = createExecutionContext();
  const res = await app.fetch(new Request(`https://witness.test${path}`, { method, headers: { "CF-Connecting-IP": "10.7.7.7" } }), { ...env, METER: meter }, ctx);
  await waitOnExecutionContext(ctx);
  return { status: res.status, body: await res.json() };
}

describe("/__meter: the invocation meter's report, for the benches", () => {
  it("answers the worst invocation of each kind where METER is enforce, Durable Object calls included, and resets", async () => {
    const p = await createProject();
    const names = async () => (await report()).map((r) => r.invocation);
    expect((await call("POST", "/__meter/reset")).status).toBe(204);
    // (The report's own request still leases from the rate limiter before it reads the report.)
    expect(await names()).not.toContain("POST /v1/events");

    expect((await ingest(p.key, { action: "user.login", actor: { id: "u1" } })).status).toBe(201);
    expect((await call("GET", "/v1/events", { key: p.key })).status).toBe(200);
    expect((await call("GET", "/v1/log", { key: p.key })).status).toBe(200);
    const rows = await report();
    // Methods the ledger inherits from its read side (src/durable/ledger-log-rpc.ts) are metered too.
    expect(rows.some((r) => r.invocation === "ProjectLedger.logInfo"), JSON.stringify(rows.map((r) => r.invocation))).toBe(true);
    const named = (name: string) => rows.find((r) => r.invocation === name);
    for (const name of ["POST /v1/events", "GET /v1/events"]) {
      expect(named(name), `${name} in ${JSON.stringify(rows)}`).toBeDefined();
      expect(named(name)!.subrequests).toBeGreaterThan(0);
      expect(named(name)!.subrequests).toBeLessThanOrEqual(LIMITS.subrequests);
    }
    expect(named("GET /v1/events")!.d1Queries).toBeGreaterThan(0);
    // The ledger runs in the same isolate as the Worker: its calls are invocations of their own, reported too.
    const ledger = rows.filter((r) => r.invocation.startsWith("ProjectLedger."));
    expect(ledger.length, JSON.stringify(rows)).toBeGreaterThan(0);
    expect(ledger.some((r) => r.d1Queries > 0)).toBe(true);
    // Its own calls are not in it.
    expect(rows.some((r) => r.invocation.includes("/__meter"))).toBe(false);

    expect((await call("POST", "/__meter/reset")).status).toBe(204);
    const after = await names();
    // The ledger's alarm runs on its own schedule and may fire after the reset, and a ledger's start (loadHead, then
    // drainAudit) may be another test file's ledger starting meanwhile: only what the requests above caused must be gone.
    const ownSchedule = new Set(["ProjectLedger.alarm", "ProjectLedger.loadHead", "ProjectLedger.drainAudit"]);
    const caused = ledger.map((r) => r.invocation).filter((name) => !ownSchedule.has(name));
    for (const name of ["POST /v1/events", "GET /v1/events", ...caused]) expect(after).not.toContain(name);
  });

  it("does not exist without METER = enforce: every method and path answers as an unknown route does", async () => {
    const unknown = await plain("", "GET", "/no-such-route");
    expect(unknown.status).toBe(404);
    for (const meter of ["", "off", "ENFORCE"]) {
      for (const [method, path] of [["GET", "/__meter"], ["POST", "/__meter/reset"], ["GET", "/__meter/anything"]]) {
        expect(await plain(meter, method, path), `${method} ${path} with METER=${JSON.stringify(meter)}`).toEqual(unknown);
      }
    }
    // Where it exists, only its two requests are served; anything else under it is an unknown route.
    expect(await plain("enforce", "GET", "/__meter")).toMatchObject({ status: 200 });
    expect(await plain("enforce", "PUT", "/__meter")).toEqual(unknown);
    expect(await plain("enforce", "GET", "/__meter/reset")).toEqual(unknown);
  });
});
