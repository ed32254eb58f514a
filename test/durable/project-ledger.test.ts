import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { EventRow } from "../../src/db/schema";
import { canonicalPayload, chainHash, rowCommitment } from "../../src/sealing/payload";
import { checkSignature, loadKeyring } from "../../src/sealing/signing-keys";
import { call, createProject, ingest, dbOf } from "../helpers";

async function rows(projectId: string) {
  const { results } = await (await dbOf(projectId)).prepare("SELECT * FROM events WHERE project_id = ? ORDER BY seq").bind(projectId).all<EventRow>();
  return results;
}

/** The head as the ledger holds it in its own storage. */
async function head(projectId: string) {
  const { seq, hash } = await env.LEDGER.get(env.LEDGER.idFromName(projectId)).anchor();
  return { seq, hash };
}

/** Recomputes every link, hash and signature the way a verifier would. */
async function expectIntactChain(list: EventRow[]) {
  const ring = await loadKeyring(env.SIGNING_KEYS);
  let prev: string | null = null;
  for (const [i, row] of list.entries()) {
    expect(row.seq).toBe(i + 1);
    expect(row.prev_hash).toBe(prev);
    const payload = canonicalPayload(row, (await rowCommitment(row))!);
    expect(await chainHash(row.prev_hash, payload)).toBe(row.hash);
    expect(await checkSignature(ring, payload, row.signature)).toBe(true);
    prev = row.hash;
  }
}

describe("ProjectLedger", () => {
  it("turns 200 concurrent appends into one linear chain (seq 1..200, no shared prev_hash)", async () => {
    const p = await createProject();
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => ingest(p.key, { action: "load.tested", metadata: { i } })));
    expect(results.every((r) => r.status === 201)).toBe(true);
    const list = await rows(p.id);
    expect(list).toHaveLength(200);
    expect(new Set(list.map((r) => r.prev_hash)).size).toBe(200);
    await expectIntactChain(list);
    expect(await head(p.id)).toEqual({ seq: 200, hash: list[199].hash });
  });

  it("replays an Idempotency-Key retry without appending", async () => {
    const p = await createProject();
    const headers = { "Idempotency-Key": "order-123-created" };
    const first = await ingest(p.key, { action: "order.created" }, { headers });
    const retry = await ingest(p.key, { action: "order.created" }, { headers });
    expect(first.status).toBe(201);
    expect(retry.status).toBe(201);
    expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
    expect(retry.json.data).toEqual(first.json.data);
    const concurrent = await Promise.all(Array.from({ length: 5 }, () => ingest(p.key, { action: "x" }, { headers: { "Idempotency-Key": "same" } })));
    expect(new Set(concurrent.map((r) => r.json.data.id)).size).toBe(1);
    expect(await rows(p.id)).toHaveLength(2);
    // The key is per project: another project may use the same one.
    const other = await createProject();
    expect((await ingest(other.key, { action: "order.created" }, { headers })).headers.get("Idempotent-Replayed")).toBeNull();
    const tooLong = await ingest(p.key, { action: "x" }, { headers: { "Idempotency-Key": "k".repeat(256) } });
    expect(tooLong.status).toBe(400);
  });

  it("attack: an Idempotency-Key reused with a different body is refused with 422, not replayed", async () => {
    const p = await createProject();
    const headers = { "Idempotency-Key": "refund-42" };
    const first = await ingest(p.key, { action: "refund.issued", metadata: { amount: 10 } }, { headers });
    expect(first.status).toBe(201);
    const other = await ingest(p.key, { action: "refund.issued", metadata: { amount: 10000 } }, { headers });
    expect(other.status).toBe(422);
    expect(other.json.error).toMatchObject({ code: "IDEMPOTENCY_KEY_REUSED", details: { idempotency_key: "refund-42" } });
    const concurrent = await Promise.all([
      ingest(p.key, { action: "a" }, { headers: { "Idempotency-Key": "race" } }),
      ingest(p.key, { action: "b" }, { headers: { "Idempotency-Key": "race" } }),
    ]);
    expect(concurrent.map((r) => r.status).sort()).toEqual([201, 422]);
    expect(await rows(p.id)).toHaveLength(2);
    // The same body still replays.
    expect((await ingest(p.key, { action: "refund.issued", metadata: { amount: 10 } }, { headers })).headers.get("Idempotent-Replayed")).toBe("true");
  });

  it("leaves no row and an unchanged head when D1 fails mid-append, and links the next append correctly", async () => {
    const p = await createProject();
    const before = await ingest(p.key, { action: "before.failure" });
    // A real D1 failure inside the batch, after the first inserts of the statement ran.
    await p.db.exec(
      `CREATE TRIGGER inject_failure BEFORE INSERT ON events WHEN NEW.project_id = '${p.id}' AND NEW.action = 'will.fail' BEGIN SELECT RAISE(ABORT, 'injected'); END`,
    );
    try {
      const batch = await call("POST", "/v1/events/batch", {
        key: p.key,
        body: { events: [{ action: "ok.one" }, { action: "ok.two" }, { action: "will.fail" }] },
      });
      expect(batch.status).toBe(500);
      expect(batch.json.error.code).toBe("INTERNAL_ERROR");
      expect((await ingest(p.key, { action: "will.fail" })).status).toBe(500);
    } finally {
      await p.db.exec("DROP TRIGGER inject_failure");
    }
    expect(await rows(p.id)).toHaveLength(1);
    expect(await head(p.id)).toEqual({ seq: 1, hash: before.json.data.hash });
    const after = await ingest(p.key, { action: "after.failure" });
    expect(after.status).toBe(201);
    expect(after.json.data.prev_hash).toBe(before.json.data.hash);
    const list = await rows(p.id);
    expect(list.map((r) => r.seq)).toEqual([1, 2]);
    await expectIntactChain(list);
  });

  it("keeps personal data out of the payload: only a salted commitment is hashed", async () => {
    const p = await createProject();
    const res = await ingest(p.key, { action: "a", actor: { id: "u_secret", name: "Ada", email: "ada@example.com" } }, { headers: { "User-Agent": "agent/1" } });
    const [row] = await rows(p.id);
    const payload = canonicalPayload(row, (await rowCommitment(row))!);
    for (const clear of ["u_secret", "Ada", "ada@example.com", "agent/1"]) expect(payload).not.toContain(clear);
    expect(payload).toContain(res.json.data.pii_commitment);
    expect(row.pii_salt).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe("POST /v1/events/batch", () => {
  it("appends 1-100 events in chain order and returns them", async () => {
    const p = await createProject();
    const events = Array.from({ length: 100 }, (_, i) => ({ action: `bulk.${i}` }));
    const res = await call("POST", "/v1/events/batch", { key: p.key, body: { events } });
    expect(res.status).toBe(201);
    expect(res.json.data.map((e: { action: string }) => e.action)).toEqual(events.map((e) => e.action));
    expect(res.json.data.map((e: { seq: number }) => e.seq)).toEqual(events.map((_, i) => i + 1));
    await expectIntactChain(await rows(p.id));
  });

  it("is all-or-nothing: one bad event stores none, and a 413 names its index", async () => {
    const p = await createProject();
    const invalid = await call("POST", "/v1/events/batch", { key: p.key, body: { events: [{ action: "ok" }, { organization: "x" }] } });
    expect(invalid.status).toBe(400);
    expect(invalid.json.error.details.issues[0].path).toBe("events.1.action");
    const large = await call("POST", "/v1/events/batch", {
      key: p.key,
      body: { events: [{ action: "ok" }, { action: "ok" }, { action: "ok", metadata: { big: "x".repeat(9000) } }] },
    });
    expect(large.status).toBe(413);
    expect(large.json.error.details).toMatchObject({ index: 2, field: "events.2.metadata", limit: 8192 });
    expect(await rows(p.id)).toHaveLength(0);
  });

  it("refuses an empty batch, more than 100 events, or a body without events", async () => {
    const p = await createProject();
    for (const body of [{ events: [] }, { events: Array.from({ length: 101 }, () => ({ action: "a" })) }, { event: [] }, { events: "x" }]) {
      const res = await call("POST", "/v1/events/batch", { key: p.key, body });
      expect(res.status).toBe(400);
      expect(res.json.error.code).toBe("VALIDATION_ERROR");
    }
    expect(await rows(p.id)).toHaveLength(0);
  });
});
