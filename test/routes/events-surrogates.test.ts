import { describe, expect, it } from "vitest";
import { call, createProject, dbOf, ingest } from "../helpers";

/** "Ada 😀".slice(0, 5): a display name cut in the middle of an emoji. */
const CUT = "Ada \ud83d";

async function count(projectId: string) {
  const row = await (await dbOf(projectId)).prepare("SELECT COUNT(*) AS n FROM events WHERE project_id = ?").bind(projectId).first<{ n: number }>();
  return row!.n;
}

describe("unpaired UTF-16 surrogates", () => {
  it.each([
    ["action", { action: CUT }, "action"],
    ["organization", { action: "a", organization: CUT }, "organization"],
    ["actor.id", { action: "a", actor: { id: CUT } }, "actor.id"],
    ["actor.type", { action: "a", actor: { type: "\udc00" } }, "actor.type"],
    ["actor.name", { action: "a", actor: { id: "u_1", name: CUT } }, "actor.name"],
    ["actor.email", { action: "a", actor: { email: "ada\ud83d@example.com" } }, "actor.email"],
    ["a target's name", { action: "a", targets: [{ type: "doc", id: "1" }, { type: "doc", id: "2", name: CUT }] }, "targets.1.name"],
    ["a metadata value, nested", { action: "a", metadata: { note: { lines: ["ok", CUT] } } }, "metadata.note.lines.1"],
    ["a metadata key", { action: "a", metadata: { [CUT]: 1 } }, `metadata (key ${JSON.stringify(CUT)})`],
  ])("in %s are refused with 400 naming the field, and nothing is stored", async (_name, body, path) => {
    const p = await createProject();
    // JSON.stringify writes the lone surrogate as the escape \ud83d: valid JSON, as a client sends it.
    const res = await ingest(p.key, body);
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe("VALIDATION_ERROR");
    expect(res.json.error.details.issues[0].path).toBe(path);
    expect(res.json.error.message).toMatch(/unpaired UTF-16 surrogate/);
    expect(await count(p.id)).toBe(0);
  });

  it("refuse a whole batch, naming the event's index", async () => {
    const p = await createProject();
    const res = await call("POST", "/v1/events/batch", { key: p.key, body: { events: [{ action: "fine" }, { action: "a", actor: { name: CUT } }] } });
    expect(res.status).toBe(400);
    expect(res.json.error.details.issues[0].path).toBe("events.1.actor.name");
    expect(await count(p.id)).toBe(0);
  });

  it("paired surrogates (emoji) everywhere are stored exactly as sent, and verify stays ok", async () => {
    const p = await createProject();
    const text = "Ada 😀 \\ud83d";
    const body = { action: "doc.😀", organization: "org 😀", actor: { id: "u_😀", type: "user", name: text }, targets: [{ type: "doc", id: "1", name: "😀" }], metadata: { "😀": text } };
    const res = await ingest(p.key, body);
    expect(res.status).toBe(201);
    const read = await call("GET", `/v1/events/${res.json.data.id}`, { key: p.key });
    expect(read.json.data).toMatchObject({ action: "doc.😀", organization: "org 😀", actor: { id: "u_😀", name: text }, metadata: { "😀": text } });
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 1, restored_surrogates: 0 });
  });
});
