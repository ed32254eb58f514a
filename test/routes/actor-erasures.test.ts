import { describe, expect, it } from "vitest";
import { call, createProject, createScopedKey, ingestMany } from "../helpers";
import { eraseApplied } from "../chain/erasure-helpers";

const ada = { id: "u/ada 1", type: "user", email: "ada@example.com" };

/**
 * GET /v1/actors/:id/erasures: erased events no longer carry the actor's id,
 * so this is how a reader (the console's actor page) tells an erased actor
 * from one that never had events.
 */
describe("GET /v1/actors/:id/erasures", () => {
  it("lists an actor's erasures, applied with their counts, by id or e-mail, and nothing for others", { timeout: 120_000 }, async () => {
    const p = await createProject();
    await ingestMany(p.key, [
      { action: "a", actor: ada, organization: "org_1" },
      { action: "a", actor: ada, organization: "org_2" },
      { action: "a", actor: { id: "u_bob" } },
      { action: "a", actor: { email: "eve@example.com" } },
    ]);
    const path = `/v1/actors/${encodeURIComponent(ada.id)}/erasures`;
    expect((await call("GET", path, { key: p.key })).json).toEqual({ data: [] });

    const first = await eraseApplied(p.key, `/v1/actors/${encodeURIComponent(ada.id)}?organization=org_1`);
    const second = await eraseApplied(p.key, `/v1/actors/${encodeURIComponent(ada.id)}`);
    const byEmail = await eraseApplied(p.key, "/v1/actors/eve%40example.com?by=email");

    const reader = await createScopedKey(p.id, ["read"]);
    const listed = await call("GET", path, { key: reader.key });
    expect(listed.status).toBe(200);
    expect(listed.json.data).toEqual([
      { erasure_id: first.json.data.erasure_id, by: "id", organization: "org_1", erased_at: expect.any(String), status: "applied", anonymized: 1 },
      { erasure_id: second.json.data.erasure_id, by: "id", organization: null, erased_at: expect.any(String), status: "applied", anonymized: 1 },
    ]);
    // The erased_at is the anonymized_at of the events it scrubbed.
    const events = (await call("GET", "/v1/events?actions=a", { key: p.key })).json.data;
    expect(events.find((e: any) => e.organization === "org_1").anonymized_at).toBe(listed.json.data[0].erased_at);

    expect((await call("GET", "/v1/actors/eve%40example.com/erasures?by=email", { key: p.key })).json.data).toEqual([
      { erasure_id: byEmail.json.data.erasure_id, by: "email", organization: null, erased_at: expect.any(String), status: "applied", anonymized: 1 },
    ]);
    // Matched exactly, and by what was erased: the e-mail is not an id.
    expect((await call("GET", "/v1/actors/eve%40example.com/erasures", { key: p.key })).json.data).toEqual([]);
    expect((await call("GET", `/v1/actors/${encodeURIComponent(ada.id.toUpperCase())}/erasures`, { key: p.key })).json.data).toEqual([]);
    expect((await call("GET", "/v1/actors/u_bob/erasures", { key: p.key })).json.data).toEqual([]);
    // Another project's erasures are not this one's.
    const other = await createProject();
    expect((await call("GET", path, { key: other.key })).json.data).toEqual([]);
  });

  it("needs read, and refuses an id no event may carry", async () => {
    const p = await createProject();
    const ingestOnly = await createScopedKey(p.id, ["ingest"]);
    expect((await call("GET", "/v1/actors/u_1/erasures", { key: ingestOnly.key })).status).toBe(403);
    expect((await call("GET", "/v1/actors/u_1/erasures")).status).toBe(401);
    const long = await call("GET", `/v1/actors/${"x".repeat(256)}/erasures`, { key: p.key });
    expect(long.status).toBe(400);
    expect(long.json.error.code).toBe("VALIDATION_ERROR");
    expect((await call("GET", "/v1/actors/u_1/erasures?by=name", { key: p.key })).status).toBe(400);
  });
});
