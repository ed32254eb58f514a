import { describe, expect, it } from "vitest";
import { call, createProject, createScopedKey, ingestMany } from "../helpers";

const at = (hour: number, minute = 0) => new Date(Date.UTC(2026, 2, 10, hour, minute)).toISOString();

describe("activity rollups and GET /v1/stats/activity", () => {
  it("counts committed events per hour and action, busiest actions apart, the rest as other", async () => {
    const p = await createProject();
    const events = [
      ...Array.from({ length: 5 }, (_, i) => ({ action: "user.login", occurred_at: at(9, i) })),
      ...Array.from({ length: 3 }, (_, i) => ({ action: "user.login", occurred_at: at(11, i) })),
      ...Array.from({ length: 4 }, (_, i) => ({ action: "invoice.paid", occurred_at: at(10, i) })),
      // Eight rarer actions: six make the top list, the two rarest fold into other.
      ...["a.1", "a.2", "a.3", "a.4", "a.5", "a.6"].flatMap((action, i) => Array.from({ length: 3 - (i >> 1) }, () => ({ action, occurred_at: at(10, 30) }))),
      { action: "z.rare", occurred_at: at(9, 59) },
      { action: "z.rarer", occurred_at: at(11, 1) },
    ];
    await ingestMany(p.key, events.slice(0, 7));
    await ingestMany(p.key, events.slice(7));
    // Another project's events and an hour outside the range count nowhere here.
    const other = await createProject();
    await ingestMany(other.key, [{ action: "user.login", occurred_at: at(9) }]);
    await ingestMany(p.key, [{ action: "user.login", occurred_at: at(13) }]);

    const res = await call("GET", `/v1/stats/activity?from=${at(9)}&to=${at(11, 59)}&bucket=hour`, { key: p.key });
    expect(res.status).toBe(200);
    const d = res.json.data;
    expect(d.bucket).toBe("hour");
    expect(d.starts).toEqual([at(9), at(10), at(11)]);
    expect(d.to).toBe("2026-03-10T11:59:59.999Z");
    expect(d.series.map((s: any) => s.action)).toEqual(["user.login", "invoice.paid", "a.1", "a.2", "a.3", "a.4"]);
    expect(d.series[0]).toEqual({ action: "user.login", total: 8, counts: [5, 0, 3] });
    expect(d.series[1].counts).toEqual([0, 4, 0]);
    expect(d.series[2].counts).toEqual([0, 3, 0]);
    // a.5, a.6 (one each, at 10:30), z.rare (09:59) and z.rarer (11:01).
    expect(d.other).toEqual([1, 2, 1]);
    expect(d.total).toBe(events.length);

    const day = await call("GET", `/v1/stats/activity?from=${at(0)}&to=${at(23)}&bucket=day`, { key: p.key });
    expect(day.json.data.starts).toEqual(["2026-03-10T00:00:00.000Z"]);
    expect(day.json.data.total).toBe(events.length + 1);
    expect(day.json.data.series[0]).toEqual({ action: "user.login", total: 9, counts: [9] });
  });

  it("needs read, and says what is wrong with a range", async () => {
    const p = await createProject();
    const ingestOnly = await createScopedKey(p.id, ["ingest"]);
    const refused = await call("GET", "/v1/stats/activity", { key: ingestOnly.key });
    expect(refused.status).toBe(403);
    expect(refused.json.error.details.required_scope).toBe("read");
    const empty = await call("GET", "/v1/stats/activity", { key: p.key });
    expect(empty.status).toBe(200);
    expect(empty.json.data.bucket).toBe("hour");
    expect(empty.json.data.starts.length).toBeGreaterThanOrEqual(168);
    expect(empty.json.data.total).toBe(0);
    const backwards = await call("GET", `/v1/stats/activity?from=${at(12)}&to=${at(9)}`, { key: p.key });
    expect(backwards.status).toBe(400);
    expect(backwards.json.error.message).toBe("from: from must not be after to");
    const wide = await call("GET", "/v1/stats/activity?from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z&bucket=hour", { key: p.key });
    expect(wide.status).toBe(400);
    expect(wide.json.error.message).toMatch(/spans more than 2000 hours; narrow it or ask for bucket=day/);
    const bucket = await call("GET", "/v1/stats/activity?bucket=week", { key: p.key });
    expect(bucket.status).toBe(400);
    expect(bucket.json.error.message).toBe("bucket: bucket must be hour or day");
    const auto = await call("GET", "/v1/stats/activity?from=2025-01-01T00:00:00Z&to=2026-01-01T00:00:00Z", { key: p.key });
    expect(auto.json.data.bucket).toBe("day");
  });
});
