import { describe, expect, it } from "vitest";
import { MAX_WAITING_APPENDS, MAX_WAITING_BYTES } from "../../src/middleware/ingest";
import { call, createProject, until } from "../helpers";
import { holdCommits, queuedEvents } from "../chain/commit-gate";

describe("the ingest door", () => {
  it("refuses at once, storing nothing, a project's requests past those already waiting on its ledger, and takes them again once it catches up", async () => {
    const project = await createProject();
    const other = await createProject();
    const release = await holdCommits(project.id);
    const waiting = Array.from({ length: MAX_WAITING_APPENDS }, (_, i) => call("POST", "/v1/events", { key: project.key, body: { action: "held.event", metadata: { i } } }));
    // All of them reached the ledger and wait on its commit (one event each: far under its queue's bound).
    await until(async () => (await queuedEvents(project.id)) >= MAX_WAITING_APPENDS);

    const refused = await call("POST", "/v1/events/batch", { key: project.key, body: { events: [{ action: "past.door" }] } });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("Retry-After")).toBe("1");
    expect(refused.json.error).toMatchObject({ code: "RATE_LIMITED", details: { reason: "ledger_busy", limit: MAX_WAITING_APPENDS, retry_after: 1 } });
    expect(refused.json.error.message).toMatch(/512 ingest requests .* already wait on it here; nothing was stored/);
    // Another project's ingest is not held up.
    expect((await call("POST", "/v1/events", { key: other.key, body: { action: "elsewhere" } })).status).toBe(201);

    release();
    expect((await Promise.all(waiting)).map((r) => r.status)).toEqual(Array(MAX_WAITING_APPENDS).fill(201));
    expect((await call("POST", "/v1/events", { key: project.key, body: { action: "after.catch.up" } })).status).toBe(201);
    expect((await call("GET", "/v1/events?action=past.door", { key: project.key })).json.data).toEqual([]);
    expect((await call("GET", "/v1/events/verify", { key: project.key })).json.data).toMatchObject({ ok: true, verified: MAX_WAITING_APPENDS + 1 });
  }, 120_000);

  it("also bounds the bytes of the bodies waiting, so large batches cannot fill the isolate either", async () => {
    const project = await createProject();
    const release = await holdCommits(project.id);
    // Batches of 100 events with 8,000 bytes of metadata each: about 0.8 MB a request.
    const batch = (tag: string) => ({ events: Array.from({ length: 100 }, (_, i) => ({ action: `big.${tag}`, metadata: { pad: "x".repeat(7_980), i } })) });
    const size = JSON.stringify(batch("held")).length;
    const fits = Math.floor(MAX_WAITING_BYTES / size);
    const waiting = Array.from({ length: fits }, () => call("POST", "/v1/events/batch", { key: project.key, body: batch("held") }));
    await until(async () => (await queuedEvents(project.id)) >= fits * 100);
    const refused = await call("POST", "/v1/events/batch", { key: project.key, body: batch("over") });
    expect(refused.status).toBe(429);
    expect(refused.json.error.details).toMatchObject({ reason: "ledger_busy" });
    // The door refused it, before its body was read (the ledger's own bound would say how much it queues).
    expect(refused.json.error.message).toMatch(new RegExp(`${fits} ingest requests \\(\\d+ KiB\\) already wait on it here`));
    release();
    expect((await Promise.all(waiting)).every((r) => r.status === 201)).toBe(true);
    expect((await call("GET", "/v1/events?action=big.over", { key: project.key })).json.data).toEqual([]);
  }, 120_000);
});
