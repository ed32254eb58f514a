import { describe, expect, it } from "vitest";
import { call, createProject, ingest, dbOf } from "../helpers";

async function count(projectId: string) {
  const row = await (await dbOf(projectId)).prepare("SELECT COUNT(*) AS n FROM events WHERE project_id = ?").bind(projectId).first<{ n: number }>();
  return row!.n;
}

describe("POST /v1/events validation", () => {
  it("rejects a missing action with VALIDATION_ERROR naming the field", async () => {
    const p = await createProject();
    const res = await ingest(p.key, { organization: "org_1" });
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe("VALIDATION_ERROR");
    expect(res.json.error.message).toMatch(/action is required/);
    expect(res.json.error.details.issues[0]).toEqual({ path: "action", message: "action is required" });
    expect(await count(p.id)).toBe(0);
  });

  it.each([
    ["empty action", { action: "" }, "action"],
    ["action of the wrong type", { action: 42 }, "action"],
    ["organization of the wrong type", { action: "a", organization: 7 }, "organization"],
    ["actor that is not an object", { action: "a", actor: "bob" }, "actor"],
    ["empty actor.id", { action: "a", actor: { id: "" } }, "actor.id"],
    ["empty actor.type", { action: "a", actor: { type: "" } }, "actor.type"],
    ["invalid actor.email", { action: "a", actor: { email: "not-an-email" } }, "actor.email"],
    ["unknown actor field", { action: "a", actor: { id: "u", role: "admin" } }, "actor"],
    ["targets that is not an array", { action: "a", targets: { type: "doc", id: "1" } }, "targets"],
    ["target without type", { action: "a", targets: [{ id: "1" }] }, "targets.0.type"],
    ["target without id", { action: "a", targets: [{ type: "doc" }] }, "targets.0.id"],
    ["target with empty id", { action: "a", targets: [{ type: "doc", id: "" }] }, "targets.0.id"],
    ["metadata that is an array", { action: "a", metadata: [1, 2] }, "metadata"],
    ["metadata that is a string", { action: "a", metadata: "x" }, "metadata"],
    ["occurred_at that is not ISO 8601", { action: "a", occurred_at: "yesterday" }, "occurred_at"],
    ["occurred_at without a zone", { action: "a", occurred_at: "2026-05-05T05:05:05" }, "occurred_at"],
    ["occurred_at on a day that does not exist", { action: "a", occurred_at: "2026-02-30T00:00:00Z" }, "occurred_at"],
    ["a server-filled field", { action: "a", hash: "abc" }, ""],
  ])("rejects %s with 400", async (_name, body, path) => {
    const p = await createProject();
    const res = await ingest(p.key, body);
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe("VALIDATION_ERROR");
    expect(res.json.error.details.issues.map((i: { path: string }) => i.path)).toContain(path);
    expect(await count(p.id)).toBe(0);
  });

  it("normalizes occurred_at with an offset to UTC milliseconds", async () => {
    const p = await createProject();
    const res = await ingest(p.key, { action: "a", occurred_at: "2026-05-05T07:05:05+02:00" });
    expect(res.status).toBe(201);
    expect(res.json.data.occurred_at).toBe("2026-05-05T05:05:05.000Z");
    const fine = await ingest(p.key, { action: "a", occurred_at: "2026-05-05T05:05:05.123456Z" });
    expect(fine.json.data.occurred_at).toBe("2026-05-05T05:05:05.123Z");
  });

  it("accepts every optional field, null as absent, and returns them in the event shape", async () => {
    const p = await createProject();
    const event = {
      action: "document.shared",
      organization: "org_42",
      actor: { id: "u_1", type: "user", name: "Ada Lovelace", email: "ada@example.com" },
      targets: [{ type: "document", id: "doc_9", name: "Q3 plan" }, { type: "user", id: "u_2" }],
      metadata: { via: "dialog", nested: { n: 1.5, ok: true, list: [null, "x"] } },
      occurred_at: "2026-05-05T05:05:05.000Z",
    };
    const res = await ingest(p.key, event);
    expect(res.status).toBe(201);
    const e = res.json.data;
    expect(e).toMatchObject({
      action: event.action,
      organization: "org_42",
      actor: event.actor,
      targets: [{ type: "document", id: "doc_9", name: "Q3 plan" }, { type: "user", id: "u_2", name: null }],
      metadata: event.metadata,
      occurred_at: event.occurred_at,
      anonymized_at: null,
    });
    const nulls = await ingest(p.key, { action: "a", organization: null, actor: null, targets: null, metadata: null, occurred_at: null });
    expect(nulls.status).toBe(201);
    expect(nulls.json.data).toMatchObject({ organization: null, actor: null, targets: [], metadata: {} });
  });

  it("needs Content-Type: application/json (415) and a JSON object body (400)", async () => {
    const p = await createProject();
    const noType = await call("POST", "/v1/events", { key: p.key, body: '{"action":"a"}', headers: { "Content-Type": "text/plain" } });
    expect(noType.status).toBe(415);
    expect(noType.json.error.code).toBe("UNSUPPORTED_MEDIA_TYPE");
    const withCharset = await call("POST", "/v1/events", { key: p.key, body: '{"action":"a"}', headers: { "Content-Type": "application/json; charset=utf-8" } });
    expect(withCharset.status).toBe(201);
    for (const body of ['{"action":', "[]", '"a"', "null", ""]) {
      const res = await call("POST", "/v1/events", { key: p.key, body, headers: { "Content-Type": "application/json" } });
      expect(res.status, body).toBe(400);
      expect(res.json.error.code).toBe("VALIDATION_ERROR");
    }
    expect(await count(p.id)).toBe(1);
  });
});

describe("POST /v1/events caps (UTF-8 bytes, 413)", () => {
  const cases: Array<[string, number, (value: string) => Record<string, unknown>]> = [
    ["action", 255, (v) => ({ action: v })],
    ["organization", 128, (v) => ({ action: "a", organization: v })],
    ["actor.id", 255, (v) => ({ action: "a", actor: { id: v } })],
    ["actor.type", 64, (v) => ({ action: "a", actor: { type: v } })],
    ["actor.name", 255, (v) => ({ action: "a", actor: { name: v } })],
    ["targets.0.type", 64, (v) => ({ action: "a", targets: [{ type: v, id: "1" }] })],
    ["targets.0.id", 255, (v) => ({ action: "a", targets: [{ type: "t", id: v }] })],
    ["targets.0.name", 255, (v) => ({ action: "a", targets: [{ type: "t", id: "1", name: v }] })],
  ];

  it.each(cases)("%s: accepted at %i bytes, 413 one byte over, counting multi-byte text in bytes", async (field, limit, make) => {
    const p = await createProject();
    expect((await ingest(p.key, make("x".repeat(limit)))).status).toBe(201);
    const over = await ingest(p.key, make("x".repeat(limit + 1)));
    expect(over.status).toBe(413);
    expect(over.json.error).toMatchObject({ code: "EVENT_TOO_LARGE", details: { field, size: limit + 1, limit } });
    expect(over.json.error.message).toContain(field);
    expect(over.json.error.message).toContain(String(limit + 1));
    expect(over.json.error.message).toContain(String(limit));
    // "é" is 2 bytes: few characters, too many bytes.
    const chars = Math.floor(limit / 2) + 1;
    const multi = await ingest(p.key, make("é".repeat(chars)));
    expect(multi.status).toBe(413);
    expect(multi.json.error.details.size).toBe(chars * 2);
    expect(await count(p.id)).toBe(1);
  });

  it("actor.email: a valid address of 255 bytes is accepted, 256 is 413", async () => {
    const p = await createProject();
    const email = (n: number) => `${"a".repeat(n - "@example.com".length)}@example.com`;
    expect((await ingest(p.key, { action: "a", actor: { email: email(255) } })).status).toBe(201);
    const over = await ingest(p.key, { action: "a", actor: { email: email(256) } });
    expect(over.status).toBe(413);
    expect(over.json.error.details).toMatchObject({ field: "actor.email", size: 256, limit: 255 });
  });

  it("metadata: 8192 bytes of serialized JSON pass, 8193 is 413 with field, size and limit", async () => {
    const p = await createProject();
    const metadata = (bytes: number) => ({ k: "x".repeat(bytes - '{"k":""}'.length) });
    expect(JSON.stringify(metadata(8192)).length).toBe(8192);
    expect((await ingest(p.key, { action: "a", metadata: metadata(8192) })).status).toBe(201);
    const over = await ingest(p.key, { action: "a", metadata: metadata(8193) });
    expect(over.status).toBe(413);
    expect(over.json.error).toMatchObject({ code: "EVENT_TOO_LARGE", details: { field: "metadata", size: 8193, limit: 8192 } });
    expect(over.json.error.message).toBe("metadata is 8193 bytes; the limit is 8192 bytes");
    const emoji = await ingest(p.key, { action: "a", metadata: { k: "😀".repeat(2048) } });
    expect(emoji.status).toBe(413);
    expect(emoji.json.error.details.size).toBe(2048 * 4 + 8);
  });

  it("targets: at most 20 entries and 4096 bytes of serialized JSON", async () => {
    const p = await createProject();
    const entries = (n: number) => Array.from({ length: n }, (_, i) => ({ type: "doc", id: String(i) }));
    expect((await ingest(p.key, { action: "a", targets: entries(20) })).status).toBe(201);
    const many = await ingest(p.key, { action: "a", targets: entries(21) });
    expect(many.status).toBe(413);
    expect(many.json.error.details).toMatchObject({ field: "targets", size: 21, limit: 20, unit: "entries" });
    const big = Array.from({ length: 20 }, (_, i) => ({ type: "document", id: `${i}`.padEnd(200, "x") }));
    const bytes = await ingest(p.key, { action: "a", targets: big });
    expect(bytes.status).toBe(413);
    expect(bytes.json.error.details).toMatchObject({ field: "targets", limit: 4096 });
    expect(bytes.json.error.details.size).toBe(new TextEncoder().encode(JSON.stringify(big)).length);
    expect(await count(p.id)).toBe(1);
  });
});
