import { env } from "cloudflare:workers";
import { introspectWorkflow } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { COSTS } from "../../src/auth/rate-cost";
import { call, createProject, createScopedKey, ingestMany } from "../helpers";

/**
 * A job walks the whole project as GET /v1/events/verify and /v1/exports do,
 * so creating one costs what they cost, a project runs at most JOB_MAX_RUNNING
 * (4 by default) at once, and a verify of a range already being verified joins
 * that job instead of starting another.
 */
const MAX_RUNNING = 4;

type Workflows = Awaited<ReturnType<typeof introspectWorkflow>>;

/**
 * Holds every job started from now on at its first step: the step fails each
 * attempt, with the engine's own delays between them (2 s, doubling: about a
 * minute in all), so the job stays queued for longer than a test may run (30 s).
 */
async function hold(workflows: Workflows) {
  await workflows.modifyAll(async (m) => {
    await m.mockStepError({ name: "plan" }, new Error("held by the test"), 6);
  });
}

const verifyFrom = (day: number) => ({ type: "verify", from: new Date(Date.UTC(2020, 0, 1 + day)).toISOString() });

async function liveJobs(p: { id: string; db: D1Database }) {
  const { results } = await p.db.prepare("SELECT id, status FROM jobs WHERE project_id = ? AND status IN ('queued', 'running')").bind(p.id).all<{ id: string; status: string }>();
  return results;
}

describe("POST /v1/jobs limits", () => {
  it("costs what a verify or an export costs, not one unit", async () => {
    const p = await createProject();
    for (const [ip, body] of [["10.33.1.1", { type: "verify" }], ["10.33.1.2", { type: "export", format: "csv" }]] as const) {
      const before = await call("GET", "/v1/jobs", { key: p.key, ip });
      expect(before.status).toBe(200);
      const created = await call("POST", "/v1/jobs", { key: p.key, ip, body });
      expect(created.status, body.type).toBe(202);
      const spent = Number(before.headers.get("RateLimit-Remaining")) - Number(created.headers.get("RateLimit-Remaining"));
      expect(spent, body.type).toBe(COSTS.verify);
    }
  });

  it(`runs at most ${MAX_RUNNING} jobs of a project at once: concurrent POSTs past it are 429 with Retry-After, and none slips through`, async () => {
    const p = await createProject();
    await ingestMany(p.key, [{ action: "doc.read" }]);
    const reader = await createScopedKey(p.id, ["read"]);
    await using workflows = await introspectWorkflow(env.JOBS);
    await hold(workflows);
    // Ten verifies of ten ranges (none joins another), all at once.
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => call("POST", "/v1/jobs", { key: reader.key, body: verifyFrom(i) })));
    const accepted = answers.filter((r) => r.status === 202);
    const refused = answers.filter((r) => r.status === 429);
    expect(accepted).toHaveLength(MAX_RUNNING);
    expect(refused).toHaveLength(10 - MAX_RUNNING);
    for (const r of refused) {
      expect(r.json.error.code).toBe("RATE_LIMITED");
      expect(r.json.error.message).toContain(`${MAX_RUNNING} jobs`);
      expect(r.json.error.details).toMatchObject({ reason: "jobs_running", limit: MAX_RUNNING, running: MAX_RUNNING });
      expect(Number(r.headers.get("Retry-After"))).toBeGreaterThan(0);
    }
    // Exactly the accepted ones were recorded, and they are still held (queued): the cap was never passed.
    const live = await liveJobs(p);
    expect(live.map((j) => j.id).sort()).toEqual(accepted.map((r) => r.json.data.id).sort());
    expect(live.every((j) => j.status === "queued")).toBe(true);
    // Exports count too.
    expect((await call("POST", "/v1/jobs", { key: p.key, body: { type: "export", format: "json" } })).status).toBe(429);

    // Canceling one frees its place.
    expect((await call("DELETE", `/v1/jobs/${accepted[0].json.data.id}`, { key: p.key })).status).toBe(200);
    const next = await call("POST", "/v1/jobs", { key: reader.key, body: verifyFrom(20) });
    expect(next.status).toBe(202);
    expect((await call("POST", "/v1/jobs", { key: reader.key, body: verifyFrom(21) })).status).toBe(429);
    for (const j of await liveJobs(p)) await call("DELETE", `/v1/jobs/${j.id}`, { key: p.key });
  });

  it("a verify of a range already being verified joins that job (202, the same job), even at the cap", async () => {
    const p = await createProject();
    await ingestMany(p.key, [{ action: "doc.read" }]);
    const reader = await createScopedKey(p.id, ["read"]);
    await using workflows = await introspectWorkflow(env.JOBS);
    await hold(workflows);
    const whole = await call("POST", "/v1/jobs", { key: p.key, body: { type: "verify" } });
    expect(whole.status).toBe(202);
    const again = await call("POST", "/v1/jobs", { key: reader.key, body: { type: "verify" } });
    expect([again.status, again.json.data.id]).toEqual([202, whole.json.data.id]);
    // Another window, or an incremental verify, is another range: a job of its own.
    const windowed = await call("POST", "/v1/jobs", { key: reader.key, body: verifyFrom(3) });
    expect(windowed.json.data.id).not.toBe(whole.json.data.id);
    expect((await call("POST", "/v1/jobs", { key: reader.key, body: verifyFrom(3) })).json.data.id).toBe(windowed.json.data.id);
    const incremental = await call("POST", "/v1/jobs", { key: reader.key, body: { type: "verify", since: "checkpoint" } });
    expect([windowed.json.data.id, whole.json.data.id]).not.toContain(incremental.json.data.id);
    expect((await call("POST", "/v1/jobs", { key: reader.key, body: { type: "export", format: "csv" } })).status).toBe(202);
    expect(await liveJobs(p)).toHaveLength(MAX_RUNNING);
    // At the cap: the same range still joins its job, a new one is refused.
    expect((await call("POST", "/v1/jobs", { key: reader.key, body: { type: "verify" } })).json.data.id).toBe(whole.json.data.id);
    expect((await call("POST", "/v1/jobs", { key: reader.key, body: verifyFrom(4) })).status).toBe(429);
    for (const j of await liveJobs(p)) await call("DELETE", `/v1/jobs/${j.id}`, { key: p.key });
    // Once it ended, the same range starts a new job.
    const fresh = await call("POST", "/v1/jobs", { key: reader.key, body: { type: "verify" } });
    expect(fresh.status).toBe(202);
    expect(fresh.json.data.id).not.toBe(whole.json.data.id);
    await call("DELETE", `/v1/jobs/${fresh.json.data.id}`, { key: p.key });
  });
});
