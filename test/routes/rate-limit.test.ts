import { describe, expect, it } from "vitest";
import { call, createProject, ingest } from "../helpers";

const INGEST_LIMIT = 1200;
const OTHER_LIMIT = 1500;

describe("rate limits", () => {
  it("sends RateLimit-* headers on successes and errors alike", async () => {
    const p = await createProject();
    const ok = await ingest(p.key, { action: "a" });
    expect(ok.headers.get("RateLimit-Limit")).toBe(String(INGEST_LIMIT));
    expect(ok.headers.get("RateLimit-Remaining")).toBe(String(INGEST_LIMIT - 1));
    expect(Number(ok.headers.get("RateLimit-Reset"))).toBeGreaterThanOrEqual(1);
    expect(Number(ok.headers.get("RateLimit-Reset"))).toBeLessThanOrEqual(60);
    const ip = "198.51.100.77";
    for (const res of [
      await call("GET", "/v1/events/nope", { key: p.key, ip }),
      await call("GET", "/v1/unknown", { ip }),
      await call("POST", "/v1/events", { body: { action: "a" }, ip }),
      await ingest(p.key, {}),
    ]) {
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.headers.get("RateLimit-Limit")).toMatch(/^\d+$/);
      expect(res.headers.get("RateLimit-Remaining")).toMatch(/^\d+$/);
      expect(res.headers.get("RateLimit-Reset")).toMatch(/^\d+$/);
      expect(Number(res.headers.get("RateLimit-Reset"))).toBeLessThanOrEqual(60);
    }
  });

  it("allows 1200 ingest requests a minute per key, then 429 with Retry-After and nothing stored", { timeout: 60_000 }, async () => {
    const p = await createProject();
    // A batch request counts as one request.
    const batch = await call("POST", "/v1/events/batch", { key: p.key, body: { events: [{ action: "a" }, { action: "b" }] } });
    expect(batch.headers.get("RateLimit-Remaining")).toBe(String(INGEST_LIMIT - 1));
    let statuses: number[] = [];
    for (let sent = 1; sent < INGEST_LIMIT; sent += 100) {
      const wave = await Promise.all(Array.from({ length: Math.min(100, INGEST_LIMIT - sent) }, () => ingest(p.key, { action: "flood" })));
      statuses = statuses.concat(wave.map((r) => r.status));
    }
    expect(statuses.every((s) => s === 201)).toBe(true);
    const refused = await ingest(p.key, { action: "one.too.many" });
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe("RATE_LIMITED");
    expect(refused.headers.get("RateLimit-Remaining")).toBe("0");
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
    const stored = await p.db.prepare("SELECT COUNT(*) AS n FROM events WHERE project_id = ? AND action = 'one.too.many'").bind(p.id).first<{ n: number }>();
    expect(stored!.n).toBe(0);
    // The budget is per key: another key of another project is unaffected, and reads are counted per IP.
    const other = await createProject();
    expect((await ingest(other.key, { action: "fine" })).status).toBe(201);
    expect((await call("GET", "/v1/events/x", { key: p.key })).status).toBe(404);
  });

  it("allows 1500 other requests a minute per IP, then 429", { timeout: 60_000 }, async () => {
    const p = await createProject();
    const ip = "192.0.2.200";
    let last = 0;
    for (let sent = 0; sent < OTHER_LIMIT; sent += 100) {
      const wave = await Promise.all(Array.from({ length: 100 }, () => call("GET", "/v1/events/missing", { key: p.key, ip })));
      last = Math.max(...wave.map((r) => Number(r.headers.get("RateLimit-Remaining") === "0")));
      expect(wave.every((r) => r.status === 404)).toBe(true);
    }
    expect(last).toBe(1);
    const refused = await call("GET", "/v1/events/missing", { key: p.key, ip });
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe("RATE_LIMITED");
    expect(refused.headers.get("Retry-After")).toMatch(/^\d+$/);
    // Ingest is not counted per IP.
    expect((await ingest(p.key, { action: "still.fine" }, { ip })).status).toBe(201);
  });
});
