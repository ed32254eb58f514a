import { describe, expect, it } from "vitest";
import { call, createProject, createScopedKey, ingest, ingestMany, parseCsv } from "../helpers";

/** A realistic schema: what member.role.changed carries, and its sentence. */
const ROLE_CHANGED = {
  description: "A member's role in an organization changed",
  metadata: {
    type: "object",
    properties: { role: { enum: ["viewer", "admin", "owner"] }, reason: { type: "string", maxLength: 200 } },
    required: ["role"],
  },
  targets: [{ type: "user", required: true }, { type: "org" }],
  actor_types: ["user", "service"],
  changes: { fields: ["role"] },
  display: "{actor.name|actor.id} changed {targets.user.name|targets.user.id}'s role from {changes.role.before|\"nothing\"} to {changes.role.after}",
};

const goodEvent = (extra: Record<string, unknown> = {}) => ({
  action: "member.role.changed",
  actor: { id: "u_1", type: "user", name: "Ada" },
  targets: [{ type: "user", id: "u_81", name: "Bob" }],
  metadata: { role: "admin" },
  changes: [{ field: "role", before: "viewer", after: "admin" }],
  ...extra,
});

async function putSchema(key: string, action: string, document: unknown) {
  return call("PUT", `/v1/schemas/${encodeURIComponent(action)}`, { key, body: document });
}

async function setMode(key: string, mode: string, unknown_actions?: string) {
  const res = await call("PUT", "/v1/catalog/settings", { key, body: { mode, ...(unknown_actions ? { unknown_actions } : {}) } });
  expect(res.status).toBe(200);
  return res.json.data;
}

const verify = async (key: string) => (await call("GET", "/v1/events/verify", { key })).json.data;

describe("action schemas", () => {
  it("PUT makes immutable versions 1, 2, ...; GET lists the newest of each, one with its versions, and any version", async () => {
    const p = await createProject();
    const v1 = await putSchema(p.key, "member.role.changed", ROLE_CHANGED);
    expect(v1.status).toBe(201);
    expect(v1.json.data).toMatchObject({ action: "member.role.changed", version: 1, created_by: p.prefix });
    expect(v1.json.data.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(v1.json.data.document.display).toBe(ROLE_CHANGED.display);
    const v2 = await putSchema(p.key, "member.role.changed", { ...ROLE_CHANGED, description: "Role changed (v2)" });
    expect(v2.json.data.version).toBe(2);
    await putSchema(p.key, "doc.read", { description: "Someone read a document" });

    const list = await call("GET", "/v1/schemas", { key: p.key });
    expect(list.status).toBe(200);
    expect(list.json.data.map((s: any) => [s.action, s.version])).toEqual([["doc.read", 1], ["member.role.changed", 2]]);
    const page = await call("GET", "/v1/schemas?limit=1", { key: p.key });
    expect(page.json.data).toHaveLength(1);
    const next = await call("GET", `/v1/schemas?limit=1&cursor=${encodeURIComponent(page.json.nextCursor)}`, { key: p.key });
    expect(next.json.data[0].action).toBe("member.role.changed");
    expect(next.json.nextCursor).toBeNull();

    const one = await call("GET", "/v1/schemas/member.role.changed", { key: p.key });
    expect(one.json.data.version).toBe(2);
    expect(one.json.data.versions.map((v: any) => v.version)).toEqual([1, 2]);
    const old = await call("GET", "/v1/schemas/member.role.changed/versions/1", { key: p.key });
    expect(old.json.data.document.description).toBe(ROLE_CHANGED.description);
    expect((await call("GET", "/v1/schemas/member.role.changed/versions/3", { key: p.key })).status).toBe(404);
    expect((await call("GET", "/v1/schemas/never.seen", { key: p.key })).status).toBe(404);

    // Each version is recorded in the chain, with the document's hash.
    const audit = await call("GET", "/v1/events?action=witness.schema.changed", { key: p.key });
    expect(audit.json.data.map((e: any) => e.metadata)).toEqual([
      { action: "doc.read", version: 1, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) },
      { action: "member.role.changed", version: 2, sha256: v2.json.data.sha256 },
      { action: "member.role.changed", version: 1, sha256: v1.json.data.sha256 },
    ]);
    // GET /v1/actions names the newest version of actions that have one.
    await ingest(p.key, { action: "doc.read" });
    await ingest(p.key, { action: "doc.deleted" });
    const actions = await call("GET", "/v1/actions?prefix=doc.", { key: p.key });
    expect(actions.json.data.map((a: any) => [a.action, a.schema_version])).toEqual([["doc.deleted", null], ["doc.read", 1]]);
  });

  it("refuses schemas that are not JSON Schema, reach outside themselves, loop, are too large or carry a bad template, naming the path", async () => {
    const p = await createProject();
    const refused = async (document: unknown, path: RegExp) => {
      const res = await putSchema(p.key, "a.b", document);
      expect(res.status, res.text).toBe(400);
      expect(res.json.error.code).toBe("VALIDATION_ERROR");
      expect(res.json.error.details.issues.map((i: any) => i.path).join(" ")).toMatch(path);
    };
    await refused({ metadata: { type: "object", properties: { role: { type: "strnig" } } } }, /metadata\.properties\.role\.type/);
    await refused({ metadata: { type: "object", requried: ["x"] } }, /metadata\.requried/);
    await refused({ metadata: { $ref: "https://example.com/schema.json" } }, /metadata\.\$ref/);
    await refused({ metadata: { $ref: "#" } }, /metadata/);
    await refused({ metadata: { $defs: { a: { $ref: "#/$defs/b" }, b: { $ref: "#/$defs/a" } }, $ref: "#/$defs/a" } }, /metadata/);
    await refused({ metadata: { type: "string", pattern: "(" } }, /metadata\.pattern/);
    await refused({ display: "{actor.name" }, /display/);
    await refused({ display: "{nothing.here}" }, /display/);
    await refused({ colour: "blue" }, /colour/);
    const big = { description: "x", metadata: { type: "object", properties: Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`field_${i}`, { type: "string" }])) } };
    const tooBig = await putSchema(p.key, "a.b", big);
    expect(tooBig.status).toBe(400);
    expect(tooBig.json.error.details).toMatchObject({ limit: 16384 });
    // Nothing was stored or recorded.
    expect((await call("GET", "/v1/schemas", { key: p.key })).json.data).toEqual([]);
    expect((await call("GET", "/v1/events?action=witness.schema.changed", { key: p.key })).json.data).toEqual([]);
    // A tree that recurses through its children is fine.
    const tree = { metadata: { type: "object", properties: { name: { type: "string" }, children: { type: "array", items: { $ref: "#" } } } } };
    expect((await putSchema(p.key, "tree.saved", tree)).status).toBe(201);
  });

  it("needs admin to change schemas or settings, and read to see them", async () => {
    const p = await createProject();
    const reader = await createScopedKey(p.id, ["read"]);
    const writer = await createScopedKey(p.id, ["ingest"]);
    expect((await putSchema(reader.key, "a.b", {})).status).toBe(403);
    expect((await call("PUT", "/v1/catalog/settings", { key: reader.key, body: { mode: "enforce" } })).status).toBe(403);
    expect((await call("GET", "/v1/schemas", { key: writer.key })).status).toBe(403);
    expect((await call("GET", "/v1/catalog/settings", { key: reader.key })).json.data).toEqual({ mode: "off", unknown_actions: "allow" });
    expect((await putSchema(p.key, "witness.key.created", {})).status).toBe(400);
    expect((await call("PUT", "/v1/catalog/settings", { key: p.key, body: { mode: "strict" } })).status).toBe(400);
  });
});

describe("validation at ingest", () => {
  it("off by default: nothing is checked and events say nothing of a schema", async () => {
    const p = await createProject();
    await putSchema(p.key, "member.role.changed", ROLE_CHANGED);
    const res = await ingest(p.key, goodEvent({ metadata: { role: "emperor" } }));
    expect(res.status).toBe(201);
    expect(res.json.data).toMatchObject({ schema_version: null, schema_valid: null });
  });

  it("enforce refuses an event that breaks its schema, naming each path and the version; in a batch nothing is stored", async () => {
    const p = await createProject();
    await putSchema(p.key, "member.role.changed", ROLE_CHANGED);
    expect(await setMode(p.key, "enforce")).toEqual({ mode: "enforce", unknown_actions: "allow" });

    const ok = await ingest(p.key, goodEvent());
    expect(ok.status).toBe(201);
    expect(ok.json.data).toMatchObject({ schema_version: 1, schema_valid: true });

    const bad = await ingest(p.key, goodEvent({ metadata: { role: "emperor" } }));
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe("VALIDATION_ERROR");
    expect(bad.json.error.details.schema_version).toBe(1);
    expect(bad.json.error.details.issues[0].path).toBe("metadata.role");
    expect(bad.json.error.message).toMatch(/metadata\.role/);

    const batch = await call("POST", "/v1/events/batch", {
      key: p.key,
      body: { events: [goodEvent(), goodEvent({ actor: { id: "bot", type: "robot" }, targets: [] })] },
    });
    expect(batch.status).toBe(400);
    const paths = batch.json.error.details.issues.map((i: any) => i.path);
    expect(paths).toContain("events.1.actor.type");
    expect(paths).toContain("events.1.targets");
    expect(batch.json.error.details.index).toBe(1);
    // Only the one good single event is stored.
    expect((await call("GET", "/v1/events?action=member.role.changed", { key: p.key })).json.data).toHaveLength(1);

    // Actions without a schema pass, unless the catalog rejects unknown actions.
    expect((await ingest(p.key, { action: "doc.read" })).status).toBe(201);
    await setMode(p.key, "enforce", "reject");
    const unknown = await ingest(p.key, { action: "doc.read" });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error.details.issues[0].path).toBe("action");
    // The service's own records are never refused.
    const changes = await call("GET", "/v1/events?action=witness.catalog.changed", { key: p.key });
    expect(changes.json.data[0].metadata).toEqual({ before: { mode: "enforce", unknown_actions: "allow" }, after: { mode: "enforce", unknown_actions: "reject" } });
  });

  it("warn stores every event and says which version it broke, inside the hash; version n checks against an older version", async () => {
    const p = await createProject();
    await putSchema(p.key, "member.role.changed", ROLE_CHANGED);
    // Version 2 adds "guest".
    const v2 = { ...ROLE_CHANGED, metadata: { ...ROLE_CHANGED.metadata, properties: { ...ROLE_CHANGED.metadata.properties, role: { enum: ["viewer", "admin", "owner", "guest"] } } } };
    await putSchema(p.key, "member.role.changed", v2);
    await setMode(p.key, "warn");
    const guest = await ingest(p.key, goodEvent({ metadata: { role: "guest" } }));
    expect(guest.json.data).toMatchObject({ schema_version: 2, schema_valid: true });
    const asV1 = await ingest(p.key, goodEvent({ metadata: { role: "guest" }, version: 1 }));
    expect(asV1.status).toBe(201);
    expect(asV1.json.data).toMatchObject({ schema_version: 1, schema_valid: false });
    expect((await ingest(p.key, goodEvent({ version: 7 }))).status).toBe(400);
    expect(await verify(p.key)).toMatchObject({ ok: true });

    // The version and verdict are inside the hash: flipping either in D1 breaks the chain.
    await p.db.prepare("UPDATE events SET schema_valid = 1 WHERE id = ?").bind(asV1.json.data.id).run();
    expect(await verify(p.key)).toMatchObject({ ok: false, failure: { event_id: asV1.json.data.id, reason: "hash_mismatch" } });
  });

  it("a retry with the same Idempotency-Key replays its first answer even after the catalog began refusing such events", async () => {
    const p = await createProject();
    await putSchema(p.key, "member.role.changed", ROLE_CHANGED);
    const body = goodEvent({ metadata: { role: "emperor" } });
    const headers = { "Idempotency-Key": "retry-1" };
    const first = await call("POST", "/v1/events", { key: p.key, body, headers });
    expect(first.status).toBe(201);
    await setMode(p.key, "enforce");
    const again = await call("POST", "/v1/events", { key: p.key, body, headers });
    expect(again.status).toBe(201);
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
    expect(again.json.data.id).toBe(first.json.data.id);
    // A new key with the same body is checked, and refused.
    expect((await call("POST", "/v1/events", { key: p.key, body, headers: { "Idempotency-Key": "retry-2" } })).status).toBe(400);
  });

  it("takes a change of settings made elsewhere into account on the next event (the ledger refuses a stale copy)", async () => {
    const p = await createProject();
    await putSchema(p.key, "member.role.changed", ROLE_CHANGED);
    // Warm this isolate's copy in mode off, then change the mode behind its back (straight to the ledger).
    expect((await ingest(p.key, goodEvent({ metadata: { role: "emperor" } }))).status).toBe(201);
    const { env } = await import("cloudflare:workers");
    const ledger = env.LEDGER.get(env.LEDGER.idFromName(p.id));
    await ledger.putCatalogSettings({ mode: "enforce", unknown_actions: "allow" }, { type: "operator", id: "test" }, { ip_address: null, user_agent: null });
    expect((await ingest(p.key, goodEvent({ metadata: { role: "emperor" } }))).status).toBe(400);
  });
});

describe("changes and display sentences", () => {
  it("changes are stored as sent, inside the hash, returned everywhere, and the sentence renders at read time", async () => {
    const p = await createProject();
    await putSchema(p.key, "member.role.changed", ROLE_CHANGED);
    const stored = await ingest(p.key, goodEvent());
    expect(stored.json.data.changes).toEqual([{ field: "role", before: "viewer", after: "admin" }]);
    expect(stored.json.data.display).toBe("Ada changed Bob's role from viewer to admin");
    const created = await ingest(p.key, goodEvent({ actor: { id: "u_2" }, changes: [{ field: "role", after: "owner" }] }));
    expect(created.json.data.display).toBe("u_2 changed Bob's role from nothing to owner");

    const got = await call("GET", `/v1/events/${stored.json.data.id}`, { key: p.key });
    expect(got.json.data).toMatchObject({ changes: stored.json.data.changes, display: "Ada changed Bob's role from viewer to admin" });
    const list = await call("GET", "/v1/events?action=member.role.changed", { key: p.key });
    expect(list.json.data.map((e: any) => e.display)).toEqual(["u_2 changed Bob's role from nothing to owner", "Ada changed Bob's role from viewer to admin"]);
    const search = await call("GET", "/v1/events/search?q=Ada", { key: p.key });
    expect(search.json.data[0].display).toMatch(/changed Bob's role/);
    expect(await verify(p.key)).toMatchObject({ ok: true, verified: 3 });

    // Editing a stored change is caught.
    await p.db.prepare("UPDATE events SET changes = ? WHERE id = ?").bind('[{"after":"owner","before":"viewer","field":"role"}]', stored.json.data.id).run();
    expect(await verify(p.key)).toMatchObject({ ok: false, failure: { event_id: stored.json.data.id, reason: "hash_mismatch" } });
  });

  it("a hostile template or value renders as inert text", async () => {
    const p = await createProject();
    await putSchema(p.key, "x.y", { display: "<b>{metadata.note}</b> {{constructor}} {metadata.constructor}{metadata.__proto__}" });
    const res = await ingest(p.key, { action: "x.y", metadata: { note: "<script>alert(1)</script>" } });
    expect(res.json.data.display).toBe("<b><script>alert(1)</script></b> {constructor} ");
  });

  it("refuses changes that are not an array of objects with a string field, and past 50 entries or 8 KB", async () => {
    const p = await createProject();
    const bad = async (changes: unknown, status: number) => {
      const res = await ingest(p.key, { action: "a.b", changes });
      expect(res.status, res.text).toBe(status);
      return res.json.error;
    };
    expect((await bad("role", 400)).details.issues[0].path).toBe("changes");
    expect((await bad([{ before: 1 }], 400)).details.issues[0].path).toBe("changes.0.field");
    expect((await bad([{ field: 5 }], 400)).details.issues[0].path).toBe("changes.0.field");
    await bad([{ field: "a", after: 1 }, { field: "a", after: 2 }], 400);
    expect((await bad(Array.from({ length: 51 }, (_, i) => ({ field: `f${i}` })), 413)).details).toMatchObject({ field: "changes", limit: 50, unit: "entries" });
    expect((await bad([{ field: "big", after: "x".repeat(9000) }], 413)).details).toMatchObject({ field: "changes", limit: 8192 });
    expect((await call("GET", "/v1/events", { key: p.key })).json.data).toEqual([]);
    // No entries is the same as none.
    expect((await ingest(p.key, { action: "a.b", changes: [] })).json.data.changes).toBeNull();
  });

  it("exports carry changes: JSON as an array, CSV as one JSON cell", async () => {
    const p = await createProject();
    await ingestMany(p.key, [goodEvent(), { action: "plain" }]);
    const json = await call("GET", "/v1/exports?format=json", { key: p.key });
    expect(json.status).toBe(200);
    const events = JSON.parse(json.text);
    expect(events.find((e: any) => e.action === "member.role.changed").changes).toEqual([{ field: "role", before: "viewer", after: "admin" }]);
    const csv = await call("GET", "/v1/exports?format=csv", { key: p.key });
    const [header, ...rows] = parseCsv(csv.text);
    const at = header.indexOf("changes");
    expect(at).toBeGreaterThan(0);
    const cells = rows.map((r) => r[at]).sort();
    expect(cells).toEqual(["", '[{"after":"admin","before":"viewer","field":"role"}]']);
  });
});
