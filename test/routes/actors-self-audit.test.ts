import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { EventRow } from "../../src/db/schema";
import { sha256Hex } from "../../src/lib/crypto";
import { pendingDelete, pendingInsert } from "../../src/model/pending-erasures";
import { readSegment } from "../../src/storage/archive-segments";
import { call, createProject, createScopedKey, dbOf, ingest } from "../helpers";
import { eraseApplied } from "../chain/erasure-helpers";
import { archiveAll, segmentsOf } from "../storage/archive-helpers";

/**
 * Witness's own records of admin acts (witness.*) name an API key, never a
 * person: an erasure must not take their authorship away, or an admin could
 * erase who did every admin act (their own included) and verify would still
 * say ok.
 */
const ADMIN_CLIENT = { ip: "198.51.100.44", headers: { "User-Agent": "AdminCli/7" } };

async function rows(projectId: string) {
  const { results } = await (await dbOf(projectId)).prepare("SELECT * FROM events WHERE project_id = ? ORDER BY seq").bind(projectId).all<EventRow>();
  return results;
}

/** An admin act by this key: minting a key, recorded as witness.key.created with the key's prefix as its actor. */
async function adminAct(key: string) {
  const res = await call("POST", "/v1/keys", { key, body: { scopes: ["read"] }, ...ADMIN_CLIENT });
  expect(res.status).toBe(201);
}

const byAction = (list: EventRow[], action: string) => list.filter((r) => r.action === action);

describe("DELETE /v1/actors/:id and Witness's own records", () => {
  it("refuses (400) an id that names only an API key in self-audit records, and changes nothing", async () => {
    const p = await createProject();
    const admin = await createScopedKey(p.id, ["admin"]);
    await ingest(p.key, { action: "doc.read", actor: { id: "u_ada" } });
    await adminAct(admin.key);
    const before = await rows(p.id);
    expect(byAction(before, "witness.key.created").map((r) => r.actor_id)).toEqual([admin.prefix]);

    for (const [key, id] of [[p.key, admin.prefix], [admin.key, admin.prefix]] as const) {
      const res = await call("DELETE", `/v1/actors/${id}`, { key });
      expect(res.status).toBe(400);
      expect(res.json.error.code).toBe("VALIDATION_ERROR");
      expect(res.json.error.message).toMatch(/self-audit records name API keys and sessions, not people, and are never erased/);
    }
    // Nothing recorded, nothing scrubbed, no job.
    expect(await rows(p.id)).toEqual(before);
    expect((await call("GET", "/v1/jobs", { key: p.key })).json.data.filter((j: { type: string }) => j.type === "erasure")).toEqual([]);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, anonymized: 0 });
  });

  it("refuses the caller's own key prefix, even before it authored any record", async () => {
    const p = await createProject();
    const res = await call("DELETE", `/v1/actors/${p.prefix}`, { key: p.key });
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe("VALIDATION_ERROR");
  });

  it("lets the erasure through once the look at archived segments passes its bound, and still scrubs no self-audit record", async () => {
    const p = await createProject();
    const admin = await createScopedKey(p.id, ["admin"]);
    // The admin key's records spread over more archived segments than one request may read.
    for (let i = 0; i < 22; i++) {
      await ingest(p.key, { action: "doc.read", actor: { id: `u_${i}` } });
      await adminAct(admin.key);
    }
    await archiveAll(p.id, 2);
    const segments = await segmentsOf(p.db, p.id);
    expect(segments.length).toBeGreaterThan(20);

    expect((await eraseApplied(p.key, `/v1/actors/${admin.prefix}`)).status).toBe(202);
    const archived = (await Promise.all((await segmentsOf(p.db, p.id)).map((s) => readSegment(env, s)))).flat();
    const records = [...archived, ...(await rows(p.id))].filter((r) => r.action === "witness.key.created");
    expect(records.length).toBe(22);
    expect(records.every((r) => r.actor_id === admin.prefix && r.anonymized_at === null)).toBe(true);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, anonymized: 0 });
  });

  it("still accepts an id that matches nothing at all", async () => {
    const p = await createProject();
    await adminAct(p.key);
    const res = await eraseApplied(p.key, "/v1/actors/never-seen");
    expect(res.status).toBe(202);
    expect(res.anonymized).toBe(0);
  });

  it("erases an id's own events but leaves its self-audit records' actor, address and client intact; verify stays ok", async () => {
    const p = await createProject();
    const admin = await createScopedKey(p.id, ["admin"]);
    // The application happened to send the same id on one of its events.
    const own = (await ingest(p.key, { action: "doc.read", actor: { id: admin.prefix, name: "Ada" } }, { ip: "203.0.113.9", headers: { "User-Agent": "AppUa/1" } })).json.data;
    await adminAct(admin.key);
    const res = await eraseApplied(p.key, `/v1/actors/${admin.prefix}`);
    expect(res.status).toBe(202);
    expect(res.anonymized).toBe(1);

    const after = await rows(p.id);
    expect(after.find((r) => r.id === own.id)).toMatchObject({ actor_id: null, actor_name: null, ip_address: null, user_agent: null });
    expect(byAction(after, "witness.key.created").map((r) => [r.actor_id, r.ip_address, r.user_agent, r.anonymized_at])).toEqual([
      [admin.prefix, ADMIN_CLIENT.ip, "AdminCli/7", null],
    ]);
    const listed = (await call("GET", "/v1/events?action=witness.key.created", { key: p.key })).json.data;
    expect(listed.map((e: any) => [e.actor.id, e.ip_address, e.user_agent])).toEqual([[admin.prefix, ADMIN_CLIENT.ip, "AdminCli/7"]]);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, anonymized: 1, failure: null });
  });

  it("leaves archived self-audit records alone, and refuses an id found only on them", async () => {
    const p = await createProject();
    const admin = await createScopedKey(p.id, ["admin"]);
    const mixed = await createScopedKey(p.id, ["admin"]);
    await ingest(p.key, { action: "doc.read", actor: { id: mixed.prefix } }, { ip: "203.0.113.9" });
    await adminAct(admin.key);
    await adminAct(mixed.key);
    await archiveAll(p.id, 2);
    expect(await rows(p.id)).toEqual([]);

    const refused = await call("DELETE", `/v1/actors/${admin.prefix}`, { key: p.key });
    expect(refused.status).toBe(400);
    expect(refused.json.error.code).toBe("VALIDATION_ERROR");

    const res = await eraseApplied(p.key, `/v1/actors/${mixed.prefix}`);
    expect(res.status).toBe(202);
    expect(res.anonymized).toBe(1);
    const archived = (await Promise.all((await segmentsOf(p.db, p.id)).map((s) => readSegment(env, s)))).flat();
    expect(archived.filter((r) => r.action === "doc.read").map((r) => [r.actor_id, r.ip_address])).toEqual([[null, null]]);
    expect(byAction(archived as EventRow[], "witness.key.created").map((r) => [r.actor_id, r.ip_address, r.user_agent, r.anonymized_at])).toEqual([
      [admin.prefix, ADMIN_CLIENT.ip, "AdminCli/7", null],
      [mixed.prefix, ADMIN_CLIENT.ip, "AdminCli/7", null],
    ]);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, anonymized: 1, failure: null });
  });

  it("while an erasure is pending, reads scrub the id's own events but serve its self-audit records as stored, hot or archived", async () => {
    const p = await createProject();
    const admin = await createScopedKey(p.id, ["admin"]);
    const own = (await ingest(p.key, { action: "doc.read", actor: { id: admin.prefix } })).json.data;
    await adminAct(admin.key);
    const db = await dbOf(p.id);
    const subject = await sha256Hex(`id:${admin.prefix}`);
    const pending = { erasure_id: 999, by: "id" as const, subject_sha256: subject, organization: null, erased_at: new Date().toISOString(), through_seq: 1_000 };

    const served = async () => {
      const listed = (await call("GET", "/v1/events", { key: p.key })).json.data as any[];
      const witness = listed.find((e) => e.action === "witness.key.created");
      const got = (await call("GET", `/v1/events/${witness.id}`, { key: p.key })).json.data;
      const found = (await call("GET", `/v1/events/search?q=${admin.prefix}`, { key: p.key })).json.data as any[];
      const exported = JSON.parse((await call("GET", "/v1/exports?format=json", { key: p.key })).text) as any[];
      return {
        listed: listed.map((e) => [e.action, e.actor?.id ?? null]),
        got: [got.actor.id, got.ip_address, got.user_agent],
        found: found.map((e) => e.action),
        exported: exported.map((e) => [e.action, e.actor?.id ?? null]),
      };
    };
    const expected = {
      listed: [
        ["witness.key.created", admin.prefix],
        ["doc.read", null],
      ],
      got: [admin.prefix, ADMIN_CLIENT.ip, "AdminCli/7"],
      found: ["witness.key.created"],
      exported: [
        ["witness.key.created", admin.prefix],
        ["doc.read", null],
      ],
    };
    await pendingInsert(db, p.id, pending).run();
    try {
      expect(await served()).toEqual(expected);
      await archiveAll(p.id, 5);
      expect(await rows(p.id)).toEqual([]);
      const archived = await served();
      expect(archived.listed).toEqual(expected.listed);
      expect(archived.got).toEqual(expected.got);
      expect(archived.exported).toEqual(expected.exported);
    } finally {
      await pendingDelete(db, p.id, 999).run();
    }
    // Once no erasure is pending, the application's event is served as stored again (nothing was scrubbed for good).
    expect((await call("GET", `/v1/events/${own.id}`, { key: p.key })).json.data.actor.id).toBe(admin.prefix);
  });
});
