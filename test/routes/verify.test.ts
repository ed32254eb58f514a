import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { EventRow } from "../../src/db/schema";
import { canonicalPayload, chainHash, rowCommitment } from "../../src/sealing/payload";
import worker from "../../src/index";
import { rewriteEvents } from "../log/ledger-log";
import { call, createProject, ingest, dbOf, handRowId, onEveryShard } from "../helpers";
import { eraseApplied } from "../chain/erasure-helpers";

interface Seeded {
  id: string;
  key: string;
  db: D1Database;
  events: Array<{ id: string; seq: number; occurred_at: string; hash: string; signature: string }>;
}

/** A project with `count` events carrying personal data, targets and metadata. */
async function seed(count: number, occurredAt: (i: number) => string | undefined = () => undefined): Promise<Seeded> {
  const p = await createProject();
  const events = Array.from({ length: count }, (_, i) => ({
    action: i % 2 ? "document.shared" : "document.edited",
    organization: "org_1",
    actor: { id: `u_${i}`, type: "user", name: "Ada Lovelace", email: "ada@example.com" },
    targets: [{ type: "document", id: `doc_${i}`, name: "Plan" }],
    metadata: { step: i },
    occurred_at: occurredAt(i),
  }));
  const res = await call("POST", "/v1/events/batch", { key: p.key, body: { events }, headers: { "User-Agent": "test/1" } });
  expect(res.status).toBe(201);
  return { ...p, events: res.json.data };
}

async function verify(key: string, query = "") {
  const res = await call("GET", `/v1/events/verify${query}`, { key });
  expect(res.status).toBe(200);
  return res.json.data;
}

const run = onEveryShard;

function failure(event: { id: string; occurred_at: string }, reason: string) {
  return { event_id: event.id, reason, at: event.occurred_at };
}

describe("GET /v1/events/verify", () => {
  it("passes a clean chain and counts every event", async () => {
    const p = await seed(6);
    expect(await verify(p.key)).toEqual({ ok: true, verified: 6, anonymized: 0, unsigned: 0, restored_surrogates: 0, gaps: [], failure: null, checkpoint: { tree_size: 6, root_hash: expect.any(String) } });
  });

  it("passes an empty project", async () => {
    const p = await createProject();
    expect(await verify(p.key)).toEqual({ ok: true, verified: 0, anonymized: 0, unsigned: 0, restored_surrogates: 0, gaps: [], failure: null, checkpoint: { tree_size: 0, root_hash: "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=" } });
  });

  it("needs an API key and checks only the key's project", async () => {
    const a = await seed(3);
    const b = await seed(3);
    await run("UPDATE events SET action = 'x' WHERE id = ?", a.events[1].id);
    expect((await call("GET", "/v1/events/verify")).status).toBe(401);
    const embed = (await call("POST", "/v1/embed/token", { key: a.key, body: {} })).json.data.token;
    expect((await call("GET", "/v1/events/verify", { key: embed })).status).toBe(403);
    expect((await verify(b.key)).ok).toBe(true);
    expect((await verify(a.key)).failure).toEqual(failure(a.events[1], "hash_mismatch"));
  });

  describe("names the first bad row and the reason for each kind of tampering", () => {
    it("an edited field", async () => {
      const p = await seed(5);
      await run("UPDATE events SET metadata = '{\"step\":99}' WHERE id = ?", p.events[2].id);
      expect(await verify(p.key)).toMatchObject({ ok: false, verified: 2, failure: failure(p.events[2], "hash_mismatch") });
    });

    it("an edited personal field (covered by the commitment)", async () => {
      const p = await seed(4);
      await run("UPDATE events SET actor_email = 'mallory@example.com' WHERE id = ?", p.events[1].id);
      expect((await verify(p.key)).failure).toEqual(failure(p.events[1], "hash_mismatch"));
    });

    it("an edited pii_commitment, the value reads and exports show (the personal data no longer commits to it)", async () => {
      const p = await seed(4);
      await run("UPDATE events SET pii_commitment = ? WHERE id = ?", "0".repeat(64), p.events[2].id);
      const shown = await call("GET", `/v1/events/${p.events[2].id}`, { key: p.key });
      expect(shown.json.data.pii_commitment).toBe("0".repeat(64));
      expect(await verify(p.key)).toMatchObject({ ok: false, verified: 2, failure: failure(p.events[2], "hash_mismatch") });
    });

    it("an edited occurred_at", async () => {
      const p = await seed(4);
      await run("UPDATE events SET occurred_at = '2020-01-01T00:00:00.000Z' WHERE id = ?", p.events[3].id);
      expect((await verify(p.key)).failure).toEqual({ event_id: p.events[3].id, reason: "hash_mismatch", at: "2020-01-01T00:00:00.000Z" });
    });

    it("two swapped signatures", async () => {
      const p = await seed(5);
      await run("UPDATE events SET signature = ? WHERE id = ?", p.events[3].signature, p.events[1].id);
      await run("UPDATE events SET signature = ? WHERE id = ?", p.events[1].signature, p.events[3].id);
      expect(await verify(p.key)).toMatchObject({ ok: false, verified: 1, failure: failure(p.events[1], "signature_mismatch") });
    });

    it("a deleted middle row", async () => {
      const p = await seed(5);
      await run("DELETE FROM events WHERE id = ?", p.events[2].id);
      expect((await verify(p.key)).failure).toEqual(failure(p.events[3], "chain_broken"));
    });

    it("a deleted newest row", async () => {
      const p = await seed(5);
      await run("DELETE FROM events WHERE id = ?", p.events[4].id);
      expect(await verify(p.key)).toMatchObject({ ok: false, verified: 4, failure: failure(p.events[3], "chain_broken") });
    });

    it("deleted newest rows, with nothing in D1 left to say how many there were", async () => {
      const p = await seed(5);
      await run("DELETE FROM events WHERE id IN (?, ?)", p.events[3].id, p.events[4].id);
      // The ledger's own record of the head still says 5.
      expect(await verify(p.key)).toMatchObject({ ok: false, verified: 3, failure: failure(p.events[2], "chain_broken") });
    });

    it("a rewritten history whose hashes were all recomputed, its first signature stripped", async () => {
      const p = await seed(3);
      // Signatures do not cover prev_hash, so an attacker can strip the first signature,
      // edit that row and recompute every hash after it: the ledger's signed-from seq gives it away.
      const rows = (await p.db.prepare("SELECT * FROM events WHERE project_id = ? ORDER BY seq").bind(p.id).all<EventRow>()).results;
      rows[0] = { ...rows[0], action: "nothing.happened", signature: null };
      let prev: string | null = null;
      for (const row of rows) {
        row.prev_hash = prev;
        row.hash = await chainHash(prev, canonicalPayload(row, (await rowCommitment(row))!));
        prev = row.hash;
        await run("UPDATE events SET action = ?, signature = ?, prev_hash = ?, hash = ? WHERE id = ?", row.action, row.signature, row.prev_hash, row.hash, row.id);
      }
      expect((await verify(p.key)).failure).toEqual(failure(p.events[0], "signature_mismatch"));
    });

    it("anonymized_at set on an edited row", async () => {
      const p = await seed(4);
      await run("UPDATE events SET anonymized_at = ?, action = 'user.deleted' WHERE id = ?", new Date().toISOString(), p.events[1].id);
      expect((await verify(p.key)).failure).toEqual(failure(p.events[1], "hash_mismatch"));
    });

    it("a stripped signature", async () => {
      const p = await seed(4);
      await run("UPDATE events SET signature = NULL WHERE id = ?", p.events[2].id);
      expect((await verify(p.key)).failure).toEqual(failure(p.events[2], "signature_mismatch"));
    });

    it("a signature under an unknown key version", async () => {
      const p = await seed(3);
      await run("UPDATE events SET signature = 'v7' || substr(signature, 3) WHERE id = ?", p.events[0].id);
      expect((await verify(p.key)).failure).toEqual(failure(p.events[0], "signature_mismatch"));
    });

    it("a rewritten hash, which breaks the next row's link", async () => {
      const p = await seed(4);
      await run("UPDATE events SET hash = ? WHERE id = ?", "0".repeat(64), p.events[1].id);
      expect((await verify(p.key)).failure).toEqual(failure(p.events[1], "hash_mismatch"));
    });

    it("a row planted past the recorded head", async () => {
      const p = await seed(3);
      await run(
        "INSERT INTO events (row_id, id, project_id, seq, action, targets, metadata, occurred_at, received_at, pii_commitment, hash, prev_hash) " +
          `VALUES (${handRowId("?1", "4")}, 'planted', ?1, 4, 'x', '[]', '{}', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 'c', 'h', ?2)`,
        p.id,
        p.events[2].hash,
      );
      expect((await verify(p.key)).failure).toEqual({ event_id: "planted", reason: "chain_broken", at: "2026-01-01T00:00:00.000Z" });
    });
  });

  it("counts properly erased rows apart and still checks them", async () => {
    const p = await seed(4);
    for (const actor of ["u_1", "u_2"]) expect((await eraseApplied(p.key, `/v1/actors/${actor}`)).status).toBe(202);
    // Two untouched events and each erasure's own record (witness.actor.erased).
    expect(await verify(p.key)).toEqual({ ok: true, verified: 4, anonymized: 2, unsigned: 0, restored_surrogates: 0, gaps: [], failure: null, checkpoint: { tree_size: 6, root_hash: expect.any(String) } });
    // Personal data planted back on an erased row cannot be vouched for.
    await run("UPDATE events SET actor_name = 'Someone Else' WHERE id = ?", p.events[2].id);
    expect((await verify(p.key)).failure).toEqual(failure(p.events[2], "hash_mismatch"));
  });

  it("attack: an anonymization forged in D1 is caught, since no erasure record covers it", async () => {
    const p = await seed(4);
    const forge = "UPDATE events SET actor_id = NULL, actor_name = NULL, actor_email = NULL, ip_address = NULL, user_agent = NULL, pii_salt = NULL, anonymized_at = ? WHERE id = ?";
    await run(forge, new Date().toISOString(), p.events[1].id);
    expect((await verify(p.key)).failure).toEqual(failure(p.events[1], "hash_mismatch"));
    // Borrowing the time of a real erasure does not help: the record covers other rows.
    expect((await eraseApplied(p.key, "/v1/actors/u_3")).status).toBe(202);
    const real = (await call("GET", `/v1/events/${p.events[3].id}`, { key: p.key })).json.data.anonymized_at;
    await run("UPDATE events SET anonymized_at = ? WHERE id = ?", real, p.events[1].id);
    expect((await verify(p.key)).failure).toEqual(failure(p.events[1], "hash_mismatch"));
  });

  it("attack: an event rewritten in D1 and re-signed with the real HMAC key is caught through its leaf", async () => {
    const p = await seed(5);
    // An insider with the signing key rewrites seq 3 and re-seals every later row: hashes, links and signatures all check out.
    await rewriteEvents(p.db, p.id, 3, 5);
    const result = await verify(p.key);
    expect(result.failure).toEqual({ event_id: p.events[2].id, reason: "leaf_mismatch", at: p.events[2].occurred_at });
    expect(result.verified).toBe(2);
    // verify names the checkpoint it checked against: the one the log publishes.
    const log = (await call("GET", "/v1/log", { key: p.key })).json.data;
    expect(result.checkpoint).toEqual({ tree_size: 5, root_hash: log.root_hash });
  });

  it("attack: stripping every signature in D1 does not make rows 'unsigned'", async () => {
    const p = await seed(5);
    // The ledger records that this project is signed from seq 1; D1 cannot move that.
    await run("UPDATE events SET signature = NULL WHERE project_id = ?", p.id);
    const result = await verify(p.key);
    expect(result.failure).toEqual(failure(p.events[0], "signature_mismatch"));
    expect(result.unsigned).toBe(0);
    // With signatures gone, an edit with a recomputed hash would have passed before; it is still caught.
    await run("UPDATE events SET signature = NULL WHERE id = ?", p.events[3].id);
    expect((await verify(p.key)).ok).toBe(false);
  });

  describe("windows", () => {
    const day = (d: number) => `2026-03-${String(d).padStart(2, "0")}T12:00:00.000Z`;

    it("checks only rows whose occurred_at is inside from..to (inclusive)", async () => {
      const p = await seed(6, (i) => day(i + 1));
      expect(await verify(p.key, `?from=${day(2)}&to=${day(4)}`)).toMatchObject({ ok: true, verified: 3 });
      expect(await verify(p.key, `?from=${day(5)}`)).toMatchObject({ ok: true, verified: 2 });
      expect(await verify(p.key, `?to=2026-03-01T12:00:00%2B00:00`)).toMatchObject({ ok: true, verified: 1 });
      await run("UPDATE events SET action = 'x' WHERE id = ?", p.events[0].id);
      expect((await verify(p.key, `?from=${day(2)}`)).ok).toBe(true);
      expect((await verify(p.key, `?to=${day(3)}`)).failure).toEqual(failure(p.events[0], "hash_mismatch"));
    });

    it("checks the chain's end only when the window reaches it", async () => {
      const p = await seed(4, (i) => day(i + 1));
      await run("DELETE FROM events WHERE id = ?", p.events[3].id);
      expect((await verify(p.key, `?to=${day(2)}`)).ok).toBe(true);
      expect((await verify(p.key, `?from=${day(1)}&to=${day(3)}`)).failure).toEqual(failure(p.events[2], "chain_broken"));
      expect((await verify(p.key, `?from=${day(2)}`)).failure).toEqual(failure(p.events[2], "chain_broken"));
    });

    it("refuses invalid bounds with 400", async () => {
      const p = await createProject();
      for (const q of ["?from=yesterday", "?to=2026-13-01T00:00:00Z", "?from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z"]) {
        const res = await call("GET", `/v1/events/verify${q}`, { key: p.key });
        expect(res.status).toBe(400);
        expect(res.json.error.code).toBe("VALIDATION_ERROR");
      }
    });
  });

  describe("backdated events", () => {
    it("never fail: the chain is in append order, not occurred_at order", async () => {
      const p = await seed(5, (i) => (i === 3 ? "2020-01-01T00:00:00.000Z" : undefined));
      expect(await verify(p.key)).toMatchObject({ ok: true, verified: 5 });
      expect(await verify(p.key, "?to=2021-01-01T00:00:00Z")).toMatchObject({ ok: true, verified: 1 });
      expect(await verify(p.key, "?from=2021-01-01T00:00:00Z")).toMatchObject({ ok: true, verified: 4 });
    });

    it("are still linked to their chain predecessor when it is outside the window", async () => {
      const p = await seed(5, (i) => (i === 3 ? "2020-01-01T00:00:00.000Z" : undefined));
      // Rewrite row 3's hash; only the backdated row 4 is in the window, and its link catches it.
      await run("UPDATE events SET hash = ? WHERE id = ?", "f".repeat(64), p.events[2].id);
      expect((await verify(p.key, "?to=2021-01-01T00:00:00Z")).failure).toEqual(failure(p.events[3], "chain_broken"));
    });
  });

  describe("key rotation", () => {
    const V1 = "1:test-signing-key-version-one";
    const V2 = "2:test-signing-key-version-two";

    it("keeps old events verifying with their version while the newest key signs", async () => {
      const original = env.SIGNING_KEYS;
      try {
        const p = await seed(2);
        expect(p.events.map((e) => e.signature.slice(0, 3))).toEqual(["v1:", "v1:"]);
        env.SIGNING_KEYS = `${V1},${V2}`;
        const later = await ingest(p.key, { action: "after.rotation" });
        expect(later.json.data.signature).toMatch(/^v2:/);
        expect(await verify(p.key)).toMatchObject({ ok: true, verified: 3 });
        // Retiring version 1 too early: its events no longer verify.
        env.SIGNING_KEYS = V2;
        expect((await verify(p.key)).failure).toEqual(failure(p.events[0], "signature_mismatch"));
      } finally {
        env.SIGNING_KEYS = original;
      }
    });
  });

  describe("retention gaps", () => {
    const OLD = "2020-01-01T00:00:00.000Z";
    const ago = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString();

    /** Adds or changes one rule of the project's plan through the API, as its owner would. */
    async function setPlan(p: { key: string }, pattern: string, days: number) {
      const current = (await call("GET", "/v1/retention", { key: p.key })).json.data.rules as Array<{ pattern: string }>;
      const rules = [...current.filter((r) => r.pattern !== pattern), { pattern, days }];
      const res = await call("PUT", "/v1/retention", { key: p.key, body: { rules } });
      expect(res.status).toBe(200);
    }

    /** The daily cron, as Cloudflare would invoke it. */
    async function cron() {
      const ctx = createExecutionContext();
      await worker.scheduled(createScheduledController({ scheduledTime: new Date(), cron: "17 3 * * *" }), env, ctx);
      await waitOnExecutionContext(ctx);
    }

    /** The seeded events left; each plan change also appends its own record (witness.retention.changed), counted in verified. */
    async function remaining(projectId: string) {
      const { results } = await (await dbOf(projectId))
        .prepare("SELECT seq FROM events WHERE project_id = ? AND action NOT LIKE 'witness.%' ORDER BY seq")
        .bind(projectId)
        .all<{ seq: number }>();
      return results.map((r) => r.seq);
    }

    it("purges expired events and verify passes, listing one gap per purged run", async () => {
      const p = await seed(8, (i) => ([0, 1, 2, 5, 6].includes(i) ? OLD : undefined));
      await setPlan(p, "*", 30);
      await cron();
      expect(await remaining(p.id)).toEqual([4, 5, 8]);
      const result = await verify(p.key);
      expect(result).toMatchObject({ ok: true, verified: 4, failure: null });
      expect(result.gaps).toEqual([
        { at: expect.any(String), reason: "plan_retention", purged_count: 3, first_seq: 1, last_seq: 3, rules: [{ pattern: "*", days: 30, cutoff: expect.any(String) }] },
        { at: expect.any(String), reason: "plan_retention", purged_count: 2, first_seq: 6, last_seq: 7, rules: [{ pattern: "*", days: 30, cutoff: expect.any(String) }] },
      ]);
      expect(Date.now() - Date.parse(result.gaps[0].at)).toBeLessThan(60_000);
    });

    it("gives a wildcard action rule its own days", async () => {
      const p = await seed(4, (i) => (i < 3 ? ago(10) : undefined));
      await ingest(p.key, { action: "debug.cache.miss", occurred_at: ago(10) });
      await setPlan(p, "document.e*", 7);
      await setPlan(p, "debug.*", 7);
      await cron();
      // document.edited (seq 1, 3) and debug.* (seq 5) expired; document.shared has no rule and stays.
      expect(await remaining(p.id)).toEqual([2, 4]);
      expect(await verify(p.key)).toMatchObject({ ok: true, verified: 4, gaps: [{ purged_count: 1 }, { purged_count: 1 }, { purged_count: 1 }] });
    });

    it("bridges purged newest events to the head, and later appends link across the gap", async () => {
      // The plan first (its record is seq 3), so the old events are the newest.
      const p = await seed(2);
      await setPlan(p, "*", 30);
      await ingest(p.key, { action: "old.one", occurred_at: OLD });
      await ingest(p.key, { action: "old.two", occurred_at: OLD });
      await cron();
      expect(await remaining(p.id)).toEqual([1, 2]);
      expect(await verify(p.key)).toMatchObject({ ok: true, verified: 3, gaps: [{ purged_count: 2, first_seq: 4, last_seq: 5 }] });
      await ingest(p.key, { action: "after.purge" });
      expect(await verify(p.key)).toMatchObject({ ok: true, verified: 4, gaps: [{ purged_count: 2 }] });
    });

    it("merges a later purge into the neighbouring gap record", async () => {
      const p = await seed(5, (i) => (i === 0 ? ago(100) : i === 1 ? ago(50) : undefined));
      await setPlan(p, "*", 60);
      await cron();
      await setPlan(p, "*", 40);
      await cron();
      const { results } = await p.db.prepare("SELECT first_seq, last_seq, purged_count FROM retention_gaps WHERE project_id = ?").bind(p.id).all();
      expect(results).toEqual([{ first_seq: 1, last_seq: 2, purged_count: 2 }]);
      expect(await verify(p.key)).toMatchObject({ ok: true, verified: 5, gaps: [{ purged_count: 2, first_seq: 1, last_seq: 2 }] });
    });

    it("reports only the gaps inside the window", async () => {
      const day = (d: number) => `2026-03-${String(d).padStart(2, "0")}T12:00:00.000Z`;
      const p = await seed(5, (i) => [OLD, OLD, day(5), OLD, day(10)][i]);
      // Expires 2020, keeps 2026.
      await setPlan(p, "*", Math.ceil((Date.now() - Date.parse("2021-01-01")) / 86_400_000));
      await cron();
      expect(await remaining(p.id)).toEqual([3, 5]);
      expect(await verify(p.key, `?to=${day(6)}`)).toMatchObject({ ok: true, verified: 1, gaps: [{ first_seq: 1, last_seq: 2 }] });
      // With the plan change's record, which occurred now.
      expect(await verify(p.key, `?from=${day(8)}`)).toMatchObject({ ok: true, verified: 2, gaps: [{ first_seq: 4, last_seq: 4 }] });
    });

    it("attack: a rule written into D1 alone purges nothing", async () => {
      const p = await seed(3, () => OLD);
      await run("INSERT INTO retention_rules (project_id, pattern, days) VALUES (?, '*', 1)", p.id);
      await cron();
      expect(await remaining(p.id)).toEqual([1, 2, 3]);
      expect(await verify(p.key)).toMatchObject({ ok: true, verified: 3, gaps: [] });
    });

    it("attack: a backdated event is not purged under a real rule, and verify names it", async () => {
      const p = await seed(4);
      await setPlan(p, "*", 30);
      // A database writer backdates one event so the plan would catch it.
      await run("UPDATE events SET occurred_at = ? WHERE id = ?", OLD, p.events[2].id);
      await cron();
      expect(await remaining(p.id)).toEqual([1, 2, 3, 4]);
      expect((await verify(p.key)).failure).toEqual({ event_id: p.events[2].id, reason: "hash_mismatch", at: OLD });
    });

    it("names the rule and cutoff it applied in the signed gap record", async () => {
      const p = await seed(3, (i) => (i === 0 ? OLD : undefined));
      await setPlan(p, "document.e*", 30);
      await cron();
      const [gap] = (await verify(p.key)).gaps;
      expect(gap.rules).toEqual([{ pattern: "document.e*", days: 30, cutoff: expect.any(String) }]);
      expect(Date.now() - 30 * 86_400_000 - Date.parse(gap.rules[0].cutoff)).toBeLessThan(120_000);
      // The rules are covered by the record's signature.
      await run("UPDATE retention_gaps SET rules = ? WHERE project_id = ?", JSON.stringify([{ pattern: "*", days: 1, cutoff: OLD }]), p.id);
      expect((await verify(p.key)).failure).toEqual(failure(p.events[1], "chain_broken"));
    });

    it("does not let a forged or edited gap record hide a deletion", async () => {
      const p = await seed(6, (i) => (i === 1 ? OLD : undefined));
      await setPlan(p, "*", 30);
      await cron();
      await run("UPDATE retention_gaps SET purged_count = 7 WHERE project_id = ?", p.id);
      expect((await verify(p.key)).failure).toEqual(failure(p.events[2], "chain_broken"));
      await run("UPDATE retention_gaps SET purged_count = 1 WHERE project_id = ?", p.id);
      expect((await verify(p.key)).ok).toBe(true);

      await run("DELETE FROM events WHERE id = ?", p.events[4].id);
      await run(
        "INSERT INTO retention_gaps (project_id, before_hash, last_hash, first_seq, last_seq, purged_count, purged_at, signature) VALUES (?, ?, ?, 5, 5, 1, ?, ?)",
        p.id,
        p.events[3].hash,
        p.events[4].hash,
        new Date().toISOString(),
        `v1:${"0".repeat(64)}`,
      );
      expect((await verify(p.key)).failure).toEqual(failure(p.events[5], "chain_broken"));
    });
  });
});

