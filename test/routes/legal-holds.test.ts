import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { purgeExpiredEvents } from "../../src/chain/retention";
import { call, createProject, createScopedKey, ingestMany } from "../helpers";
import { eraseApplied } from "../chain/erasure-helpers";
import { archiveAll, segmentsOf } from "../storage/archive-helpers";
import { archivedSeqs } from "../storage/retention-helpers";

const DAY = 86_400_000;
const ago = (days: number) => new Date(Date.now() - days * DAY).toISOString();

function place(key: string, body: unknown) {
  return call("POST", "/v1/legal-holds", { key, body });
}

async function seqs(db: D1Database, projectId: string, where = "1") {
  const { results } = await db.prepare(`SELECT seq FROM events WHERE project_id = ? AND ${where} ORDER BY seq`).bind(projectId).all<{ seq: number }>();
  return results.map((r) => r.seq);
}

async function gaps(db: D1Database, projectId: string) {
  const { results } = await db.prepare("SELECT first_seq, last_seq, purged_count FROM retention_gaps WHERE project_id = ? ORDER BY first_seq").bind(projectId).all();
  return results;
}

async function verify(key: string) {
  const res = await call("GET", "/v1/events/verify", { key });
  expect(res.status).toBe(200);
  return res.json.data;
}

describe("legal holds: place, list, release", () => {
  it("are placed and released by admins, listed with a read key, and recorded in the chain without who or why", async () => {
    const p = await createProject();
    const reader = await createScopedKey(p.id, ["read"]);
    const org = await place(p.key, { organization: "org_a", reason: "Subpoena 2026-17" });
    expect(org.status).toBe(201);
    expect(org.json.data).toMatchObject({ id: expect.stringMatching(/^lh_[0-9a-f]{20}$/), organization: "org_a", actor_id: null, reason: "Subpoena 2026-17", placed_by: p.prefix, released_at: null });
    const actor = await place(p.key, { organization: "org_b", actor_id: "u_secret_person", reason: "Case against u_secret_person" });
    expect(actor.status).toBe(201);
    expect((await place(reader.key, { organization: "org_c", reason: "x" })).status).toBe(403);

    const listed = await call("GET", "/v1/legal-holds", { key: reader.key });
    expect(listed.status).toBe(200);
    expect(listed.json.data.map((h: { id: string }) => h.id)).toEqual([actor.json.data.id, org.json.data.id]);

    const released = await call("DELETE", `/v1/legal-holds/${org.json.data.id}`, { key: p.key });
    expect(released.status).toBe(200);
    expect(released.json.data).toMatchObject({ id: org.json.data.id, released_at: expect.any(String), released_by: p.prefix });
    // Again: answered unchanged, recorded once.
    const again = await call("DELETE", `/v1/legal-holds/${org.json.data.id}`, { key: p.key });
    expect(again.json.data.released_at).toBe(released.json.data.released_at);

    const events = (await call("GET", "/v1/events?limit=200", { key: p.key })).json.data as any[];
    expect(events.map((e) => [e.action, e.targets, e.metadata])).toEqual([
      ["witness.legal_hold.released", [{ type: "legal_hold", id: org.json.data.id, name: null }], { organization: "org_a", names_actor: false }],
      ["witness.legal_hold.placed", [{ type: "legal_hold", id: actor.json.data.id, name: null }], { organization: "org_b", names_actor: true }],
      ["witness.legal_hold.placed", [{ type: "legal_hold", id: org.json.data.id, name: null }], { organization: "org_a", names_actor: false }],
    ]);
    expect(events.every((e) => e.actor.type === "api_key" && e.actor.id === p.prefix)).toBe(true);
    // The chain cannot be scrubbed later: it must not name the held person, nor carry the free-text reason.
    const text = JSON.stringify(events);
    expect(text).not.toContain("u_secret_person");
    expect(text).not.toContain("Subpoena");
    expect(await verify(p.key)).toMatchObject({ ok: true, verified: 3 });
  });

  it("refuses bad input with a clear 400 or 404 in the envelope", async () => {
    const p = await createProject();
    const bad: Array<[unknown, string, RegExp]> = [
      [{ reason: "no scope" }, "organization", /names an organization, an actor_id, or both/],
      [{ organization: "org_a" }, "reason", /reason is required/],
      [{ organization: "org_a", reason: "   " }, "reason", /reason must not be empty/],
      [{ organization: "org_a", reason: "r".repeat(1001) }, "reason", /reason is at most 1000 characters/],
      [{ actor_id: "", reason: "r" }, "actor_id", /actor_id must not be empty/],
      [{ organization: "o".repeat(129), reason: "r" }, "organization", /at most 128 characters/],
      [{ actor: "u_1", reason: "r" }, "", /nrecognized key|unrecognized/i],
    ];
    for (const [body, path, message] of bad) {
      const res = await place(p.key, body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(res.json.error.code).toBe("VALIDATION_ERROR");
      const issue = res.json.error.details.issues.find((i: { path: string }) => i.path === path);
      expect(issue?.message, JSON.stringify(res.json.error.details.issues)).toMatch(message);
    }
    const unknown = await call("DELETE", "/v1/legal-holds/lh_00000000000000000000", { key: p.key });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toMatchObject({ code: "NOT_FOUND", message: "No legal hold with that id in this project" });
    // Another project's hold is unknown here.
    const other = await createProject();
    const theirs = (await place(other.key, { organization: "org_a", reason: "theirs" })).json.data.id;
    expect((await call("DELETE", `/v1/legal-holds/${theirs}`, { key: p.key })).status).toBe(404);
    expect((await call("GET", "/v1/legal-holds", { key: p.key })).json.data).toEqual([]);
  });
});

describe("legal holds against the retention purge", () => {
  it("keeps held events through the purge while the others around them go, with exact gaps, and verify stays ok", async () => {
    const p = await createProject();
    const old = ago(40);
    await ingestMany(p.key, [
      { action: "doc.read", organization: "org_x", actor: { id: "u_a" }, occurred_at: old },
      { action: "doc.read", organization: "org_x", actor: { id: "u_a" }, occurred_at: old },
      { action: "doc.read", organization: "org_held", actor: { id: "u_b" }, occurred_at: old },
      { action: "doc.read", organization: "org_x", actor: { id: "u_a" }, occurred_at: old },
      { action: "doc.read", organization: "org_x", actor: { id: "u_held" }, occurred_at: old },
      { action: "doc.read", organization: "org_x", actor: { id: "u_a" }, occurred_at: old },
      { action: "doc.read", organization: "org_x", actor: { id: "u_a" } },
    ]);
    const byOrg = (await place(p.key, { organization: "org_held", reason: "audit of org_held" })).json.data.id;
    expect((await place(p.key, { actor_id: "u_held", reason: "litigation" })).status).toBe(201);
    expect((await call("PUT", "/v1/retention", { key: p.key, body: { rules: [{ pattern: "*", days: 30 }] } })).status).toBe(200);

    await purgeExpiredEvents(env, new Date());
    expect(await seqs(p.db, p.id, "seq <= 7")).toEqual([3, 5, 7]);
    // Each held event splits the expired run: one gap record per hole, none across a held event.
    expect(await gaps(p.db, p.id)).toEqual([
      { first_seq: 1, last_seq: 2, purged_count: 2 },
      { first_seq: 4, last_seq: 4, purged_count: 1 },
      { first_seq: 6, last_seq: 6, purged_count: 1 },
    ]);
    expect(await verify(p.key)).toMatchObject({ ok: true, verified: 6, gaps: [{ first_seq: 1 }, { first_seq: 4 }, { first_seq: 6 }] });

    // Released: the next purge takes it, and its hole joins the ones beside it.
    expect((await call("DELETE", `/v1/legal-holds/${byOrg}`, { key: p.key })).status).toBe(200);
    await purgeExpiredEvents(env, new Date());
    expect(await seqs(p.db, p.id, "seq <= 7")).toEqual([5, 7]);
    expect(await gaps(p.db, p.id)).toEqual([
      { first_seq: 1, last_seq: 4, purged_count: 4 },
      { first_seq: 6, last_seq: 6, purged_count: 1 },
    ]);
    expect(await verify(p.key)).toMatchObject({ ok: true });
  });

  it("keeps held archived events: a segment holding only held expired events stays archived, a mixed one is purged around them", async () => {
    const p = await createProject();
    const ev = (actor: string) => ({ action: "doc.read", actor: { id: actor }, occurred_at: ago(10) });
    await ingestMany(p.key, [...Array.from({ length: 5 }, () => ev("u_keep")), ev("u_x"), ev("u_keep"), ev("u_x"), ev("u_x"), ev("u_keep")]);
    await archiveAll(p.id, 5);
    expect((await segmentsOf(p.db, p.id)).map((s) => s.first_seq)).toEqual([1, 6]);
    await ingestMany(p.key, Array.from({ length: 3 }, () => ({ action: "doc.read", actor: { id: "u_x" } })));
    expect((await place(p.key, { actor_id: "u_keep", reason: "litigation" })).status).toBe(201);
    expect((await call("PUT", "/v1/retention", { key: p.key, body: { rules: [{ pattern: "*", days: 5 }] } })).status).toBe(200);

    await purgeExpiredEvents(env, new Date());
    // 1-5 are all held: left as they are. 6-10 is rewritten in place: its held events stay archived, the rest went.
    expect((await segmentsOf(p.db, p.id)).map((s) => [s.first_seq, s.count])).toEqual([[1, 5], [6, 2]]);
    expect((await archivedSeqs(p.db, p.id)).filter((seq) => seq > 5)).toEqual([7, 10]);
    expect(await seqs(p.db, p.id, "seq <= 13")).toEqual([11, 12, 13]);
    expect(await gaps(p.db, p.id)).toEqual([
      { first_seq: 6, last_seq: 6, purged_count: 1 },
      { first_seq: 8, last_seq: 9, purged_count: 2 },
    ]);
    expect(await verify(p.key)).toMatchObject({ ok: true, verified: 12, gaps: [{ first_seq: 6 }, { first_seq: 8 }] });
  });
});

describe("legal holds against erasure", () => {
  async function snapshot(p: { id: string; db: D1Database }) {
    const { results } = await p.db.prepare("SELECT * FROM events WHERE project_id = ? ORDER BY seq").bind(p.id).all();
    return results;
  }

  it("refuses to erase a held actor (409 LEGAL_HOLD) and changes nothing", async () => {
    const p = await createProject();
    await ingestMany(p.key, [
      { action: "doc.read", organization: "org_a", actor: { id: "u_1", email: "one@example.com", name: "One" } },
      { action: "doc.read", organization: "org_b", actor: { id: "u_1", email: "one@example.com", name: "One" } },
      { action: "doc.read", organization: "org_c", actor: { id: "u_2", email: "two@example.com" } },
      { action: "doc.read", organization: "org_c", actor: { email: "three@example.com" } },
    ]);
    const byActor = (await place(p.key, { actor_id: "u_1", organization: "org_b", reason: "case 1" })).json.data.id;
    const byOrg = (await place(p.key, { organization: "org_c", reason: "case 2" })).json.data.id;
    const before = await snapshot(p);

    const refused: Array<[string, string]> = [
      ["/v1/actors/u_1", byActor],
      ["/v1/actors/one%40example.com?by=email", byActor],
      ["/v1/actors/u_1?organization=org_b", byActor],
      ["/v1/actors/u_2", byOrg],
      ["/v1/actors/three%40example.com?by=email", byOrg],
    ];
    for (const [path, hold] of refused) {
      const res = await call("DELETE", path, { key: p.key });
      expect(res.status, path).toBe(409);
      expect(res.json.error).toMatchObject({ code: "LEGAL_HOLD", details: { holds: [hold] } });
      expect(res.json.error.message).toMatch(/nothing was erased/);
    }
    expect(await snapshot(p)).toEqual(before);
    expect((await call("GET", "/v1/events?action=witness.actor.erased", { key: p.key })).json.data).toEqual([]);

    // The hold covers u_1 in org_b only: org_a's events may go.
    const scoped = await eraseApplied(p.key, "/v1/actors/u_1?organization=org_a");
    expect(scoped.anonymized).toBe(1);
    // Released, the rest may go too.
    await call("DELETE", `/v1/legal-holds/${byActor}`, { key: p.key });
    expect((await eraseApplied(p.key, "/v1/actors/u_1")).anonymized).toBe(1);
    expect(await verify(p.key)).toMatchObject({ ok: true, anonymized: 2 });
  });

  it("finds a held event in the archive too", async () => {
    const p = await createProject();
    await ingestMany(p.key, [
      { action: "doc.read", organization: "org_a", actor: { id: "u_1" } },
      { action: "doc.read", organization: "org_a", actor: { id: "u_2" } },
    ]);
    await archiveAll(p.id, 5);
    expect((await segmentsOf(p.db, p.id)).length).toBe(1);
    await place(p.key, { organization: "org_a", reason: "case 3" });
    const res = await call("DELETE", "/v1/actors/u_1", { key: p.key });
    expect(res.status).toBe(409);
    expect(res.json.error.code).toBe("LEGAL_HOLD");
    expect(await verify(p.key)).toMatchObject({ ok: true, anonymized: 0 });
  });
});
