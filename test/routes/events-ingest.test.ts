import { describe, expect, it } from "vitest";
import { createProject, ingest } from "../helpers";

describe("POST /v1/events", () => {
  it("stores a minimal event, fills server fields and returns 201 with the event", async () => {
    const p = await createProject();
    const res = await ingest(p.key, { action: "user.login.succeeded" }, { headers: { "User-Agent": "curl/8" }, ip: "203.0.113.9" });
    expect(res.status).toBe(201);
    const e = res.json.data;
    expect(e.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(e.project_id).toBe(p.id);
    expect(e.ip_address).toBe("203.0.113.9");
    expect(e.user_agent).toBe("curl/8");
    expect(e.prev_hash).toBeNull();
    expect(e.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(e.signature).toMatch(/^v1:[0-9a-f]{64}$/);
    expect(e.actor).toBeNull();
    expect(e.targets).toEqual([]);
    expect(e.metadata).toEqual({});
    expect(Date.parse(e.occurred_at)).toBeGreaterThan(Date.now() - 60_000);
    const second = await ingest(p.key, { action: "user.logout" });
    expect(second.json.data.prev_hash).toBe(e.hash);
  });
});
