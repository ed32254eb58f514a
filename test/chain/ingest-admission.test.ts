import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DEFAULT_EVENTS_PER_MINUTE, IngestAdmission, MAX_INBOX_WAIT_MS, MAX_QUEUED_BYTES, MAX_QUEUED_EVENTS, MIN_EVENTS_PER_MINUTE } from "../../src/chain/ingest-admission";
import type { ProjectLedger } from "../../src/durable/project-ledger.do";
import { packEvents } from "../../src/chain/ledger";
import { parseEvent } from "../../src/schemas/event";
import { holdCommits, queuedEvents } from "./commit-gate";
import { call, createProject, until } from "../helpers";

const ledger = (projectId: string) => env.LEDGER.get(env.LEDGER.idFromName(projectId));
const batchOf = (n: number, action = "burst.event") => ({ events: Array.from({ length: n }, (_, i) => ({ action, actor: { id: `u_${i}` } })) });

describe("ingest admission (unit)", () => {
  it("refuses past the queue's bounds, with a wait from how fast the queue drains", async () => {
    const load = { events: MAX_QUEUED_EVENTS - 50, bytes: 0, drainRate: 2_000 };
    const admission = new IngestAdmission(() => load, async () => null);
    expect(await admission.admit(50, 1_000)).toBeNull();
    const refused = await admission.admit(51, 1_000);
    expect(refused).toMatchObject({ reason: "ledger_busy", limit: MAX_QUEUED_EVENTS });
    // 9,950 queued at 2,000 a second: 5 s.
    expect(refused!.retryAfter).toBe(5);
    load.events = 10;
    load.bytes = MAX_QUEUED_BYTES - 100;
    expect(await admission.admit(1, 200)).toMatchObject({ reason: "ledger_busy" });
    // An empty queue admits whatever one request carries, however large.
    load.events = 0;
    load.bytes = 0;
    expect(await admission.admit(100, MAX_QUEUED_BYTES + 1)).toBeNull();
  });

  it("refuses an append that waited too long to reach the ledger, saying how long", async () => {
    const admission = new IngestAdmission(() => ({ events: 0, bytes: 0, drainRate: 0 }), async () => null);
    const now = Date.parse("2026-11-28T12:00:00Z");
    expect(await admission.admit(100, 0, now, now - MAX_INBOX_WAIT_MS)).toBeNull();
    expect(await admission.admit(100, 0, now, now - 12_345)).toEqual({ reason: "ledger_busy", retryAfter: 13, limit: MAX_QUEUED_EVENTS, waitedMs: 12_345 });
    expect((await admission.admit(100, 0, now, now - 120_000))!.retryAfter).toBe(30);
  });

  it("counts a project's events per minute, all of a batch or none of it", async () => {
    const admission = new IngestAdmission(() => ({ events: 0, bytes: 0, drainRate: 0 }), async () => 1_500);
    const t0 = Date.parse("2026-11-28T12:00:00Z");
    for (let i = 0; i < 15; i++) expect(await admission.admit(100, 0, t0 + i)).toBeNull();
    const refused = await admission.admit(1, 0, t0 + 20_000);
    expect(refused).toEqual({ reason: "project_events", retryAfter: 40, limit: 1_500 });
    // A new minute, a new budget.
    expect(await admission.admit(100, 0, t0 + 60_001)).toBeNull();
  });

  it("keeps the operator's setting at or above the floor, and the default when none is set", async () => {
    expect(await new IngestAdmission(() => ({ events: 0, bytes: 0, drainRate: 0 }), async () => 10).limit()).toBe(MIN_EVENTS_PER_MINUTE);
    expect(await new IngestAdmission(() => ({ events: 0, bytes: 0, drainRate: 0 }), async () => null).limit()).toBe(DEFAULT_EVENTS_PER_MINUTE);
  });
});

describe("ingest admission (through HTTP)", () => {
  it("answers 429 with Retry-After once the project's events budget is spent, and stores nothing of the refused batch", async () => {
    const project = await createProject();
    await env.DB.prepare("UPDATE projects SET ingest_events_per_minute = ? WHERE id = ?").bind(MIN_EVENTS_PER_MINUTE, project.id).run();
    for (let i = 0; i < MIN_EVENTS_PER_MINUTE / 100; i++) {
      const res = await call("POST", "/v1/events/batch", { key: project.key, body: batchOf(100) });
      expect(res.status).toBe(201);
    }
    const refused = await call("POST", "/v1/events/batch", { key: project.key, body: batchOf(100, "over.budget") });
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe("RATE_LIMITED");
    expect(refused.json.error.details).toMatchObject({ reason: "project_events", limit: MIN_EVENTS_PER_MINUTE });
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
    expect(refused.json.error.message).toMatch(/1,200 events per minute.*nothing was stored/);
    const listed = await call("GET", "/v1/events?action=over.budget", { key: project.key });
    expect(listed.json.data).toEqual([]);
  });

  it("refuses, storing nothing, an append that reached the ledger after waiting past the bound in its inbox", async () => {
    const project = await createProject();
    expect((await call("POST", "/v1/events", { key: project.key, body: { action: "before.wait" } })).status).toBe(201);
    const late = await ledger(project.id).append({
      events: packEvents([parseEvent({ action: "late.arrival" }, { ip_address: null, user_agent: null })]),
      idempotencyKey: null,
      requestHash: null,
      keyPrefix: project.key.split("_")[2],
      rateLimit: 1_200,
      catalogRevision: await runInDurableObject(ledger(project.id), (instance: ProjectLedger) => (instance as unknown as { catalog: { revision(): number } }).catalog.revision()),
      bytes: 100,
      sentAt: Date.now() - MAX_INBOX_WAIT_MS - 1_000,
    });
    expect(late).toMatchObject({ status: "overloaded", refusal: { reason: "ledger_busy" } });
    expect((late as { refusal: { waitedMs: number } }).refusal.waitedMs).toBeGreaterThan(MAX_INBOX_WAIT_MS);
    const listed = await call("GET", "/v1/events?action=late.arrival", { key: project.key });
    expect(listed.json.data).toEqual([]);
    expect((await call("GET", "/v1/events/verify", { key: project.key })).json.data).toMatchObject({ ok: true, verified: 1 });
  });

  it("bounds the commit queue: a burst past it is refused with 429 while the ledger stays up, and everything admitted commits", async () => {
    const project = await createProject();
    // Hold every commit until released: the queue fills as a burst against a slow database would.
    const release = await holdCommits(project.id);
    const queued = MAX_QUEUED_EVENTS / 100;
    const admitted = Array.from({ length: queued }, () => call("POST", "/v1/events/batch", { key: project.key, body: batchOf(100) }));
    await until(async () => (await queuedEvents(project.id)) >= MAX_QUEUED_EVENTS);
    const refused = await call("POST", "/v1/events/batch", { key: project.key, body: batchOf(100, "past.queue") });
    expect(refused.status).toBe(429);
    expect(refused.json.error.details).toMatchObject({ reason: "ledger_busy", limit: MAX_QUEUED_EVENTS });
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
    release();
    const answers = await Promise.all(admitted);
    expect(answers.map((a) => a.status)).toEqual(Array(queued).fill(201));
    const verify = await call("GET", "/v1/events/verify", { key: project.key });
    expect(verify.json.data).toMatchObject({ ok: true, verified: MAX_QUEUED_EVENTS });
    const listed = await call("GET", "/v1/events?action=past.queue", { key: project.key });
    expect(listed.json.data).toEqual([]);
  }, 120_000);
});
