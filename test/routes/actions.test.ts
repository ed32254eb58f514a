import { describe, expect, it } from "vitest";
import { call, createProject, createScopedKey, ingestMany } from "../helpers";

const at = (iso: string) => ({ occurred_at: iso });

describe("GET /v1/actions", () => {
  it("lists every recorded action with its count and first and last hour, in name order, from the rollups", async () => {
    const p = await createProject();
    await ingestMany(p.key, [
      { action: "member.role.changed", ...at("2026-03-01T10:15:00Z") },
      { action: "member.role.changed", ...at("2026-03-04T08:59:59Z") },
      { action: "member.invited", ...at("2026-03-02T00:00:00Z") },
      { action: "doc.read", ...at("2026-03-03T23:30:00Z") },
      { action: "member.role.changed", ...at("2026-02-27T17:45:00Z") },
    ]);
    const res = await call("GET", "/v1/actions", { key: p.key });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      data: [
        { action: "doc.read", count: 1, first_seen: "2026-03-03T23:00:00.000Z", last_seen: "2026-03-03T23:59:59.999Z", schema_version: null },
        { action: "member.invited", count: 1, first_seen: "2026-03-02T00:00:00.000Z", last_seen: "2026-03-02T00:59:59.999Z", schema_version: null },
        { action: "member.role.changed", count: 3, first_seen: "2026-02-27T17:00:00.000Z", last_seen: "2026-03-04T08:59:59.999Z", schema_version: null },
      ],
      nextCursor: null,
    });

    const members = await call("GET", "/v1/actions?prefix=member.", { key: p.key });
    expect(members.json.data.map((a: { action: string }) => a.action)).toEqual(["member.invited", "member.role.changed"]);
    // A prefix is text, not a pattern.
    expect((await call("GET", "/v1/actions?prefix=member%25", { key: p.key })).json.data).toEqual([]);
  });

  it("pages with nextCursor until every action was listed once", async () => {
    const p = await createProject();
    const names = Array.from({ length: 7 }, (_, i) => `a.${i}`);
    await ingestMany(p.key, names.map((action) => ({ action })));
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: any = await call("GET", `/v1/actions?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { key: p.key });
      expect(res.status).toBe(200);
      expect(res.json.data.length).toBeLessThanOrEqual(3);
      seen.push(...res.json.data.map((a: { action: string }) => a.action));
      cursor = res.json.nextCursor;
    } while (cursor);
    expect(seen).toEqual(names);
  });

  it("needs read, and answers bad parameters with a clear 400", async () => {
    const p = await createProject();
    const ingestOnly = await createScopedKey(p.id, ["ingest"]);
    expect((await call("GET", "/v1/actions", { key: ingestOnly.key })).status).toBe(403);
    expect((await call("GET", "/v1/actions")).status).toBe(401);
    for (const [query, path] of [["limit=0", "limit"], ["limit=201", "limit"], ["limit=x", "limit"], ["cursor=%%%", "cursor"], [`prefix=${"p".repeat(201)}`, "prefix"]]) {
      const res = await call("GET", `/v1/actions?${query}`, { key: p.key });
      expect(res.status, query).toBe(400);
      expect(res.json.error.code).toBe("VALIDATION_ERROR");
      expect(res.json.error.details.issues.map((i: { path: string }) => i.path)).toContain(path);
    }
  });
});
