import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { EventRow } from "../../src/db/schema";
import { packEvents } from "../../src/chain/ledger";
import { AuditOutbox } from "../../src/chain/audit-outbox";
import { ErasureRecords } from "../../src/chain/erasure-records";
import { auditEvent } from "../../src/chain/self-audit";
import type { ProjectLedger } from "../../src/durable/project-ledger.do";
import { sha256Hex } from "../../src/lib/crypto";
import { canonicalPayload, chainHash, rowCommitment } from "../../src/sealing/payload";
import { checkSignature, loadKeyring } from "../../src/sealing/signing-keys";
import { parseEvent } from "../../src/schemas/event";
import { SEARCH_TABLE, searchExpression } from "../../src/model/search-index";
import { call, createProject, createScopedKey, ingest, ingestMany, dbOf } from "../helpers";
import { accepted, eraseApplied } from "../chain/erasure-helpers";

const ada = { id: "u_ada", type: "user", name: "Ada Lovelace", email: "ada@example.com" };
const bob = { id: "u_bob", type: "user", name: "Bob Byron", email: "bob@example.com" };
const client = { ip: "203.0.113.7", headers: { "User-Agent": "AdaBrowser/1.0" } };

async function rows(projectId: string) {
  const { results } = await (await dbOf(projectId)).prepare("SELECT * FROM events WHERE project_id = ? ORDER BY seq").bind(projectId).all<EventRow & { search_words: string | null }>();
  return results;
}

/** The application's events: each erasure also appends its own record (witness.actor.erased) to the chain. */
const appEvents = (list: EventRow[]) => list.filter((r) => !r.action.startsWith("witness."));

/** Every row still links, hashes and verifies its signature; erased rows stand on their commitment. */
async function expectIntactChain(list: EventRow[]) {
  const ring = await loadKeyring(env.SIGNING_KEYS);
  let prev: string | null = null;
  const broken: Array<{ seq: number; problem: string }> = [];
  for (const row of list) {
    const commitment = await rowCommitment(row);
    const payload = commitment === null ? null : canonicalPayload(row, commitment);
    if (row.prev_hash !== prev) broken.push({ seq: row.seq, problem: "link" });
    else if (payload === null) broken.push({ seq: row.seq, problem: "personal data without salt" });
    else if ((await chainHash(row.prev_hash, payload)) !== row.hash) broken.push({ seq: row.seq, problem: "hash" });
    else if (!(await checkSignature(ring, payload, row.signature))) broken.push({ seq: row.seq, problem: "signature" });
    prev = row.hash;
  }
  expect(broken).toEqual([]);
  expect(list.length).toBeGreaterThan(0);
}

/** The erasure, accepted (202) and then applied by its job (waited for). */
function erase(key: string, actorId: string, organization?: string) {
  const query = organization === undefined ? "" : `?organization=${encodeURIComponent(organization)}`;
  return eraseApplied(key, `/v1/actors/${encodeURIComponent(actorId)}${query}`);
}

/** Entries of the project's search index for words starting with term (asked the way a search asks). */
async function indexMatches(projectId: string, term: string) {
  const db = await dbOf(projectId);
  return db.prepare(`SELECT rowid FROM ${SEARCH_TABLE} WHERE ${SEARCH_TABLE} MATCH ?`).bind(searchExpression([term], projectId)).all();
}

describe("DELETE /v1/actors/:id", () => {
  it("scrubs the actor's personal data and salt, keeps the commitment and the rest of the event", async () => {
    const p = await createProject();
    const a1 = (await ingest(p.key, { action: "doc.shared", organization: "org_a", actor: ada, targets: [{ type: "doc", id: "d1" }], metadata: { n: 1 } }, client)).json.data;
    const a2 = (await ingest(p.key, { action: "doc.read", organization: "org_b", actor: ada }, client)).json.data;
    const b1 = (await ingest(p.key, { action: "doc.read", organization: "org_a", actor: bob }, client)).json.data;
    const before = await rows(p.id);

    const res = await erase(p.key, "u_ada");
    expect(res.status).toBe(202);
    expect(res.json).toEqual({ data: { ...accepted({ actor_id: "u_ada", by: "id", organization: null }), erasure_id: 1, job_id: res.job!.id } });
    expect(res.anonymized).toBe(2);

    const after = await rows(p.id);
    for (const id of [a1.id, a2.id]) {
      const was = before.find((r) => r.id === id)!;
      const row = after.find((r) => r.id === id)!;
      expect(row).toMatchObject({ actor_id: null, actor_name: null, actor_email: null, ip_address: null, user_agent: null, pii_salt: null });
      expect(Date.parse(row.anonymized_at!)).toBeGreaterThan(Date.now() - 60_000);
      // The words it is searched by keep only the action's.
      expect(row.search_words).toBe(was.action.replace(".", " "));
      const { actor_id, actor_name, actor_email, ip_address, user_agent, pii_salt, anonymized_at, search_words, ...kept } = was;
      expect(row).toMatchObject(kept);
    }
    expect(after.find((r) => r.id === b1.id)).toEqual(before.find((r) => r.id === b1.id));

    const shown = (await call("GET", `/v1/events/${a1.id}`, { key: p.key })).json.data;
    expect(shown.actor).toEqual({ id: null, type: "user", name: null, email: null });
    expect(shown).toMatchObject({ ip_address: null, user_agent: null, pii_commitment: a1.pii_commitment, hash: a1.hash, metadata: { n: 1 } });
    expect(shown.anonymized_at).toBe(after.find((r) => r.id === a1.id)!.anonymized_at);
    await expectIntactChain(after);
  });

  it("is harmless to repeat: nothing left to scrub, the first anonymized_at stays", async () => {
    const p = await createProject();
    const e = (await ingest(p.key, { action: "login", actor: ada })).json.data;
    expect((await erase(p.key, "u_ada")).anonymized).toBe(1);
    const first = (await rows(p.id))[0].anonymized_at;
    const again = await erase(p.key, "u_ada");
    expect(again.status).toBe(202);
    expect(again.json.data).toMatchObject(accepted({ actor_id: "u_ada", by: "id", organization: null }));
    expect(again.anonymized).toBe(0);
    expect((await call("GET", `/v1/events/${e.id}`, { key: p.key })).json.data.anonymized_at).toBe(first);
    expect((await erase(p.key, "never-seen")).anonymized).toBe(0);
  });

  it("narrowed to an organization, leaves the actor's other organizations and unscoped events alone", async () => {
    const p = await createProject();
    await ingest(p.key, { action: "a", organization: "org_a", actor: ada });
    await ingest(p.key, { action: "b", organization: "org_a", actor: ada });
    await ingest(p.key, { action: "c", organization: "org_b", actor: ada });
    await ingest(p.key, { action: "d", actor: ada });
    const res = await erase(p.key, "u_ada", "org_a");
    expect(res.json.data).toMatchObject(accepted({ actor_id: "u_ada", by: "id", organization: "org_a" }));
    expect(res.anonymized).toBe(2);
    const after = await rows(p.id);
    expect(appEvents(after).map((r) => [r.action, r.actor_name, r.anonymized_at === null])).toEqual([
      ["a", null, false],
      ["b", null, false],
      ["c", "Ada Lovelace", true],
      ["d", "Ada Lovelace", true],
    ]);
    await expectIntactChain(after);
  });

  it("never touches another project with the same actor id", async () => {
    const a = await createProject();
    const b = await createProject();
    await ingest(a.key, { action: "x", organization: "org_a", actor: ada });
    await ingest(b.key, { action: "x", organization: "org_a", actor: ada });
    const before = await rows(b.id);
    expect((await erase(a.key, "u_ada")).anonymized).toBe(1);
    expect(await rows(b.id)).toEqual(before);
  });

  it("removes the erased values from the search index", async () => {
    const p = await createProject();
    const marker = `zq${crypto.randomUUID().slice(0, 8)}`;
    const actor = { id: `${marker}id`, name: `Ada ${marker}name`, email: `${marker}mail@example.com` };
    // Each in a full search group of its own, so each group has its entry (an open group has none yet).
    const filler = Array(15).fill({ action: "doc.read" });
    await ingestMany(p.key, [{ action: "profile.updated", actor }, ...filler, { action: "profile.viewed", actor: { id: "u_other", name: `Other ${marker}name` } }, ...filler]);
    expect((await indexMatches(p.id, marker)).results).toHaveLength(2);

    await erase(p.key, actor.id);

    const left = await indexMatches(p.id, marker);
    expect(left.results).toHaveLength(1);
    const search = await call("GET", `/v1/events/search?q=${marker}`, { key: p.key });
    expect(search.status).toBe(200);
    expect(search.json.data.map((e: { actor: { id: string } }) => e.actor.id)).toEqual(["u_other"]);
    // The action stays searchable: only the personal data left the index.
    const byAction = await call("GET", "/v1/events/search?q=profile.updated", { key: p.key });
    expect(byAction.json.data.map((e: { anonymized_at: string | null }) => e.anonymized_at !== null)).toEqual([true]);
    await p.db.prepare(`INSERT INTO ${SEARCH_TABLE}(${SEARCH_TABLE}, rank) VALUES ('integrity-check', 0)`).run();
  });

  it("deletes the project's staged exports, and only that project's", async () => {
    const p = await createProject();
    const other = await createProject();
    await ingest(p.key, { action: "doc.read", actor: ada }, client);
    await env.EXPORTS.put(`exports/${p.id}/old/part-0001.json`, JSON.stringify([{ actor: ada }]));
    await env.EXPORTS.put(`exports/${p.id}/old/part-0002.json`, "[]");
    await env.EXPORTS.put(`exports/${other.id}/keep/part-0001.json`, "[]");

    expect((await erase(p.key, "u_ada")).anonymized).toBe(1);
    expect((await env.EXPORTS.list({ prefix: `exports/${p.id}/` })).objects).toEqual([]);
    expect((await env.EXPORTS.list({ prefix: `exports/${other.id}/` })).objects).toHaveLength(1);
  });

  it("leaves nothing of the actor in later exports, CSV or JSON", async () => {
    const p = await createProject();
    await ingest(p.key, { action: "doc.read", actor: ada }, client);
    await ingest(p.key, { action: "doc.read", actor: bob }, client);
    const before = await call("GET", "/v1/exports?format=csv", { key: p.key });
    expect(before.text).toContain(ada.email);
    await erase(p.key, "u_ada");
    for (const format of ["csv", "json"]) {
      const exported = await call("GET", `/v1/exports?format=${format}`, { key: p.key });
      expect(exported.status).toBe(200);
      for (const secret of [ada.id, ada.name, ada.email]) expect(exported.text).not.toContain(secret);
      expect(exported.text).toContain(bob.email);
    }
  });

  it("keeps the chain verifiable through the verify endpoint", async () => {
    const p = await createProject();
    for (let i = 0; i < 5; i++) await ingest(p.key, { action: `step.${i}`, actor: i % 2 ? ada : bob }, client);
    expect((await erase(p.key, "u_ada")).anonymized).toBe(2);
    const res = await call("GET", "/v1/events/verify", { key: p.key });
    expect(res.status).toBe(200);
    // 3 untouched events and the erasure's own record.
    expect(res.json.data).toMatchObject({ ok: true, verified: 4, anonymized: 2, failure: null });
  });

  it("serializes with concurrent appends: every append lands, the chain stays linear and intact", async () => {
    const p = await createProject();
    await Promise.all(Array.from({ length: 20 }, (_, i) => ingest(p.key, { action: "seed", actor: ada, metadata: { i } })));
    const [erased, ...appended] = await Promise.all([
      erase(p.key, "u_ada"),
      ...Array.from({ length: 20 }, (_, i) => ingest(p.key, { action: "during", actor: bob, metadata: { i } })),
    ]);
    expect(erased.anonymized).toBe(20);
    expect(appended.every((r) => r.status === 201)).toBe(true);
    const list = await rows(p.id);
    expect(list.map((r) => r.seq)).toEqual(Array.from({ length: 41 }, (_, i) => i + 1));
    expect(list.filter((r) => r.action === "witness.actor.erased")).toHaveLength(1);
    await expectIntactChain(list);
  });

  it("finds actor ids with reserved URL characters", async () => {
    const p = await createProject();
    for (const id of ["ada@example.com", "team/ada", "ada lovelace", "ä?#%"]) {
      await ingest(p.key, { action: "x", actor: { id } });
      const res = await erase(p.key, id);
      expect({ id, status: res.status, body: res.json.data, anonymized: res.anonymized }).toEqual({
        id,
        status: 202,
        body: expect.objectContaining(accepted({ actor_id: id, by: "id", organization: null })),
        anonymized: 1,
      });
    }
  });

  it("validates its input and needs an API key", async () => {
    const p = await createProject();
    expect((await erase(p.key, "u", "o".repeat(129))).status).toBe(400);
    const empty = await erase(p.key, "u", "");
    expect(empty.status).toBe(400);
    expect(empty.json.error.details.issues[0].path).toBe("organization");
    expect((await erase(p.key, "u".repeat(256))).status).toBe(400);
    expect((await call("DELETE", "/v1/actors/u_ada")).status).toBe(401);
    const token = (await call("POST", "/v1/embed/token", { key: p.key, body: {} })).json.data.token;
    expect((await erase(token, "u_ada")).status).toBe(403);
  });
});

describe("DELETE /v1/actors/<email>?by=email", () => {
  it("erases an actor sent without an id, by e-mail, with the same guarantees and answer", async () => {
    const p = await createProject();
    const guest = { type: "guest", name: "Grace Guest", email: "grace@example.com" };
    await ingest(p.key, { action: "checkout.started", actor: guest }, client);
    await ingest(p.key, { action: "checkout.completed", actor: guest, organization: "org_a" }, client);
    await ingest(p.key, { action: "checkout.started", actor: { ...guest, email: "other@example.com" } }, client);
    const res = await eraseApplied(p.key, `/v1/actors/${encodeURIComponent(guest.email)}?by=email`);
    expect(res.status).toBe(202);
    expect(res.json.data).toMatchObject(accepted({ actor_id: guest.email, by: "email", organization: null }));
    expect(res.anonymized).toBe(2);
    const list = await rows(p.id);
    expect(appEvents(list).map((r) => [r.actor_email, r.actor_name, r.ip_address, r.user_agent, r.anonymized_at !== null])).toEqual([
      [null, null, null, null, true],
      [null, null, null, null, true],
      ["other@example.com", "Grace Guest", "203.0.113.7", "AdaBrowser/1.0", false],
    ]);
    await expectIntactChain(list);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 2, anonymized: 2 });
    const search = await call("GET", "/v1/events/search?q=grace", { key: p.key });
    expect(search.json.data.map((e: { actor: { email: string | null } }) => e.actor.email)).toEqual(["other@example.com"]);
  });

  it("refuses an unknown way of naming the actor", async () => {
    const p = await createProject();
    const res = await call("DELETE", "/v1/actors/x?by=name", { key: p.key });
    expect(res.status).toBe(400);
    expect(res.json.error.details.issues[0].path).toBe("by");
  });
});

describe("the erasure's record in the chain (witness.actor.erased)", () => {
  it("says who erased how many, where and under which erasure record, and nothing of the person erased", async () => {
    const p = await createProject();
    const admin = await createScopedKey(p.id, ["admin"]);
    await ingest(p.key, { action: "doc.shared", organization: "org_a", actor: ada }, client);
    await ingest(p.key, { action: "doc.read", organization: "org_a", actor: ada }, client);
    await ingest(p.key, { action: "checkout.started", actor: { type: "guest", name: "Grace Guest", email: "grace@example.com" } }, client);
    const byId = await eraseApplied(admin.key, "/v1/actors/u_ada?organization=org_a", { ip: "198.51.100.20", headers: { "User-Agent": "AdminCli/2" } });
    expect(byId.status).toBe(202);
    const byEmail = await eraseApplied(admin.key, "/v1/actors/grace%40example.com?by=email", { ip: "198.51.100.20" });
    expect(byEmail.status).toBe(202);

    const listed = (await call("GET", "/v1/events?action=witness.actor.erased", { key: p.key })).json.data as any[];
    expect(listed.map((e) => [e.actor, e.targets, e.metadata])).toEqual([
      [{ id: admin.prefix, type: "api_key", name: null, email: null }, [{ type: "erasure", id: "2", name: null }], { by: "email", organization: null, erasure_id: 2, anonymized: 1, completed: true }],
      [{ id: admin.prefix, type: "api_key", name: null, email: null }, [{ type: "erasure", id: "1", name: null }], { by: "id", organization: "org_a", erasure_id: 1, anonymized: 2, completed: true }],
    ]);
    expect(listed[1]).toMatchObject({ ip_address: "198.51.100.20", user_agent: "AdminCli/2" });
    // Everything the service answers about these records: list, each by id, and the export.
    const texts = [JSON.stringify(listed)];
    for (const e of listed) texts.push((await call("GET", `/v1/events/${e.id}`, { key: p.key })).text);
    texts.push((await call("GET", "/v1/exports?format=json&action=witness.actor.erased", { key: p.key })).text);
    const secrets = [ada.id, ada.name, ada.email, "Grace Guest", "grace@example.com", client.ip, "AdaBrowser", await sha256Hex(`id:${ada.id}`), await sha256Hex("email:grace@example.com")];
    for (const text of texts) for (const secret of secrets) expect(text).not.toContain(secret);
    const verified = (await call("GET", "/v1/events/verify", { key: p.key })).json.data;
    expect(verified).toMatchObject({ ok: true, verified: 2, anonymized: 3, failure: null });
  });

  it("is recorded even when the erasure was interrupted: a new ledger instance appends it as not completed", async () => {
    const p = await createProject();
    await ingest(p.key, { action: "doc.read", actor: ada });
    // A crash after the erasure began: its record and its open self-audit event are stored, nothing else happened.
    await runInDurableObject(env.LEDGER.get(env.LEDGER.idFromName(p.id)), async (instance: ProjectLedger, state) => {
      const records = new ErasureRecords(state.storage.sql);
      const id = records.begin("id", await sha256Hex("id:u_ada"), null, new Date().toISOString());
      const open = auditEvent({ action: "witness.actor.erased", actor: { type: "api_key", id: p.prefix }, metadata: { by: "id", organization: null, erasure_id: id, anonymized: null, completed: false } }, { ip_address: null, user_agent: null });
      new AuditOutbox(state.storage.sql).stage(open, { open: true });
      // The instance that crashed would never have settled it; the next one (its outbox built anew) appends it.
      await (instance as unknown as { drainAudit(): Promise<void> }).drainAudit();
      expect(state.storage.sql.exec("SELECT count(*) AS n FROM audit_outbox").one().n).toBe(1);
      const next = new AuditOutbox(state.storage.sql);
      Object.assign(instance, { audit: next });
      await (instance as unknown as { drainAudit(): Promise<void> }).drainAudit();
      expect(next.pending()).toBe(0);
    });
    const listed = (await call("GET", "/v1/events?action=witness.actor.erased", { key: p.key })).json.data;
    expect(listed.map((e: any) => e.metadata)).toEqual([{ by: "id", organization: null, erasure_id: 1, anonymized: null, completed: false }]);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 2 });
  });
});

describe("DELETE /v1/actors/:id at scale", () => {
  it("erases an actor with 26,000 events in bounded batches over more than one step, and the chain still verifies", { timeout: 600_000 }, async () => {
    const p = await createProject();
    // More than one step's 25,000 (50 batches of 500: chain/erasure-steps.ts), which is what the scale is for.
    const total = 26_000;
    // Straight to the ledger in its largest group commits: the same chain code as
    // the batch endpoint, without 500 HTTP round trips.
    const ledger = env.LEDGER.get(env.LEDGER.idFromName(p.id));
    const ctx = { ip_address: client.ip, user_agent: "AdaBrowser/1.0" };
    for (let sent = 0; sent < total; sent += 1000) {
      const events = Array.from({ length: 1000 }, (_, i) => parseEvent({ action: "report.viewed", actor: ada, metadata: { i: sent + i } }, ctx));
      const res = await ledger.append({ events: packEvents(events), idempotencyKey: null, requestHash: null, keyPrefix: p.prefix, rateLimit: 1_000_000, catalogRevision: 0 });
      expect(res.status).toBe("appended");
    }
    const res = await erase(p.key, "u_ada");
    expect(res.status).toBe(202);
    expect(res.anonymized).toBe(total);
    const left = await p.db
      .prepare("SELECT COUNT(*) AS n FROM events WHERE project_id = ? AND action = 'report.viewed' AND (actor_id IS NOT NULL OR pii_salt IS NOT NULL OR anonymized_at IS NULL)")
      .bind(p.id)
      .first<{ n: number }>();
    expect(left!.n).toBe(0);
    await expectIntactChain(await rows(p.id));
    const verified = await call("GET", "/v1/events/verify", { key: p.key });
    expect(verified.json.data).toMatchObject({ ok: true, anonymized: total, failure: null });
  });
});
