import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { purgeExpiredEvents } from "../../src/chain/retention";
import { call, createProject, createScopedKey, ingestMany } from "../helpers";

const DAY = 86_400_000;
const ago = (days: number) => new Date(Date.now() - days * DAY).toISOString();

async function actions(projectId: string, db: D1Database) {
  const { results } = await db.prepare("SELECT action FROM events WHERE project_id = ? ORDER BY seq").bind(projectId).all<{ action: string }>();
  return results.map((r) => r.action);
}

async function auditEvents(key: string, action: string) {
  const res = await call("GET", `/v1/events?action=${action}&limit=200`, { key });
  expect(res.status).toBe(200);
  return res.json.data as any[];
}

describe("the attack from issue 23, replayed with an application's ingest key", () => {
  it("cannot change the plan, erase an actor or lift a hold: 403 each, and the purge then deletes nothing", async () => {
    const p = await createProject();
    const app = await createScopedKey(p.id, ["ingest"]);
    await ingestMany(app.key, [
      { action: "doc.read", actor: { id: "u_1", email: "one@example.com" }, occurred_at: ago(10) },
      { action: "doc.read", actor: { id: "u_2" }, occurred_at: ago(10) },
    ]);
    const hold = await call("POST", "/v1/legal-holds", { key: p.key, body: { actor_id: "u_2", reason: "case 7" } });
    expect(hold.status).toBe(201);

    const attempts = [
      await call("PUT", "/v1/retention", { key: app.key, body: { rules: [{ pattern: "*", days: 1 }] } }),
      await call("DELETE", "/v1/actors/u_1", { key: app.key }),
      await call("DELETE", `/v1/legal-holds/${hold.json.data.id}`, { key: app.key }),
      await call("POST", "/v1/legal-holds", { key: app.key, body: { organization: "o", reason: "x" } }),
    ];
    for (const res of attempts) {
      expect(res.status).toBe(403);
      expect(res.json.error).toMatchObject({ code: "FORBIDDEN", details: { required_scope: "admin" } });
    }
    expect((await call("GET", "/v1/retention", { key: p.key })).json.data).toEqual({ rules: [], locked: false, locked_at: null });
    expect((await call("GET", "/v1/legal-holds", { key: p.key })).json.data).toMatchObject([{ id: hold.json.data.id, released_at: null }]);
    await purgeExpiredEvents(env, new Date());
    const { results } = await p.db.prepare("SELECT actor_id, anonymized_at FROM events WHERE project_id = ? AND action = 'doc.read' ORDER BY seq").bind(p.id).all();
    expect(results).toEqual([
      { actor_id: "u_1", anonymized_at: null },
      { actor_id: "u_2", anonymized_at: null },
    ]);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, gaps: [] });
  });
});

describe("a locked retention plan, attacked with an admin key", () => {
  // In the order rules apply (longer prefixes first), as the API answers them.
  const locked = [
    { pattern: "debug.*", days: 7 },
    { pattern: "doc.*", days: 30 },
  ];

  it("refuses every change that would expire events sooner, and the purge follows the locked plan only", async () => {
    const p = await createProject();
    await ingestMany(p.key, [
      { action: "doc.old", occurred_at: ago(40) },
      { action: "debug.trace", occurred_at: ago(10) },
      { action: "other.old", occurred_at: ago(40) },
      { action: "doc.recent", occurred_at: ago(5) },
    ]);
    const lock = await call("PUT", "/v1/retention", { key: p.key, body: { rules: locked, lock: true } });
    expect(lock.status).toBe(200);
    expect(lock.json.data).toMatchObject({ rules: locked, locked: true, locked_at: expect.any(String) });
    const plan = (await call("GET", "/v1/retention", { key: p.key })).json.data;
    expect(plan).toEqual(lock.json.data);

    const admin = (await createScopedKey(p.id, ["admin"])).key;
    const attacks: Array<[string, unknown, RegExp]> = [
      ["shorten a rule", { rules: [locked[0], { pattern: "doc.*", days: 1 }] }, /events like doc\. would be kept 1 days/],
      ["remove a rule", { rules: [locked[1]] }, /the locked rule debug\.\* cannot be removed/],
      ["add a broader rule", { rules: [...locked, { pattern: "*", days: 1 }] }, /instead of forever/],
      ["add a more specific, shorter rule", { rules: [...locked, { pattern: "doc.old", days: 1 }] }, /events like doc\.old would be kept 1 days/],
      ["unlock", { rules: locked, lock: false }, /cannot be unlocked/],
      ["unlock while lengthening", { rules: [locked[0], { pattern: "doc.*", days: 60 }], lock: false }, /cannot be unlocked/],
      ["empty the plan", { rules: [] }, /cannot be removed/],
    ];
    for (const [what, body, message] of attacks) {
      const res = await call("PUT", "/v1/retention", { key: admin, body });
      expect(res.status, what).toBe(409);
      expect(res.json.error.code, what).toBe("RETENTION_LOCKED");
      expect(res.json.error.message, what).toMatch(message);
      expect((await call("GET", "/v1/retention", { key: p.key })).json.data, what).toEqual(plan);
    }
    const shortened = await call("PUT", "/v1/retention", { key: admin, body: attacks[0][1] });
    expect(shortened.json.error.details).toEqual({
      removed: [],
      shortened: [{ action: "doc.", locked_rule: { pattern: "doc.*", days: 30 }, proposed_rule: { pattern: "doc.*", days: 1 } }],
      unlock: false,
    });

    // A database writer adds the rule the API refused: D1's copy only says which ledgers to wake.
    await env.DB.prepare("INSERT INTO retention_rules (project_id, pattern, days) VALUES (?, '*', 1)").bind(p.id).run();
    await purgeExpiredEvents(env, new Date());
    // doc.old (40 > 30 days) and debug.trace (10 > 7) go; other.old has no rule and stays, as the attack's * rule would not have let it.
    expect(await actions(p.id, p.db)).toEqual(["other.old", "doc.recent", "witness.retention.changed"]);
    const verify = (await call("GET", "/v1/events/verify", { key: p.key })).json.data;
    expect(verify).toMatchObject({ ok: true, verified: 3 });
    expect(verify.gaps).toMatchObject([{ first_seq: 1, last_seq: 2, purged_count: 2 }]);

    // Keeping longer is allowed, and the plan stays locked without saying so again.
    const longer = await call("PUT", "/v1/retention", { key: admin, body: { rules: [{ pattern: "debug.*", days: 14 }, { pattern: "doc.*", days: 60 }] } });
    expect(longer.status).toBe(200);
    expect(longer.json.data).toMatchObject({ locked: true, locked_at: plan.locked_at });
    // Even a 100-year rule is a shortening for actions no rule matched: those were kept forever.
    const century = await call("PUT", "/v1/retention", { key: admin, body: { rules: [...longer.json.data.rules, { pattern: "new.*", days: 36500 }] } });
    expect(century.status).toBe(409);
  });

  it("records each change in the chain (who, old and new rules, the lock), never a refused one, and verify stays ok", async () => {
    const p = await createProject();
    const admin = await createScopedKey(p.id, ["admin"]);
    expect((await call("PUT", "/v1/retention", { key: admin.key, body: { rules: [{ pattern: "debug.*", days: 7 }] } })).status).toBe(200);
    expect((await call("PUT", "/v1/retention", { key: p.key, body: { rules: locked, lock: true }, ip: "198.51.100.9" })).status).toBe(200);
    expect((await call("PUT", "/v1/retention", { key: p.key, body: { rules: [] } })).status).toBe(409);

    const recorded = await auditEvents(p.key, "witness.retention.changed");
    expect(recorded.map((e) => e.actor)).toEqual([
      { id: p.prefix, type: "api_key", name: null, email: null },
      { id: admin.prefix, type: "api_key", name: null, email: null },
    ]);
    const [second, first] = recorded;
    expect(first.metadata).toEqual({ old_rules: [], new_rules: [{ pattern: "debug.*", days: 7 }], was_locked: false, locked: false });
    expect(second.metadata).toEqual({ old_rules: [{ pattern: "debug.*", days: 7 }], new_rules: locked, was_locked: false, locked: true });
    expect(second.ip_address).toBe("198.51.100.9");
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 2 });
  });

  it("refuses bad input to the lock with a 400 in the envelope", async () => {
    const p = await createProject();
    const res = await call("PUT", "/v1/retention", { key: p.key, body: { rules: [], lock: "yes" } });
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ code: "VALIDATION_ERROR", details: { issues: [{ path: "lock", message: "lock must be true or false" }] } });
    expect((await call("GET", "/v1/retention", { key: p.key })).json.data.locked).toBe(false);
  });
});
