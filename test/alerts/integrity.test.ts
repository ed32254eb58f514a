import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, createProject, createScopedKey, ingestMany, until } from "../helpers";
import { waitForJob } from "../jobs/job-helpers";
import { signalExpiringKeys, signalShardPressure } from "../../src/alerts/integrity";
import { Network } from "../streams/receiver";

const HOOK = "hooks.acme-integrity.com";
let net: Network;
let restore: () => void;
beforeEach(() => {
  net = new Network();
  for (const h of [HOOK, "dead.acme-integrity.com"]) net.dns.set(h, ["93.184.216.34"]);
  restore = net.install();
});
afterEach(() => restore());

async function integrityRule(key: string) {
  const rules = (await call("GET", "/v1/alerts", { key })).json.data;
  const rule = rules.find((r: any) => r.kind === "integrity");
  expect(rule, "every project has an integrity rule").toBeTruthy();
  return rule;
}

async function firings(key: string, id: string) {
  return (await call("GET", `/v1/alerts/${id}/firings`, { key })).json.data;
}


describe("integrity alerts", () => {
  it("a project has one integrity rule pointed at nothing; a failing stream is recorded in its history", async () => {
    const p = await createProject();
    const rule = await integrityRule(p.key);
    expect(rule).toMatchObject({ name: "Integrity of the trail", channels: [], enabled: true });
    net.modes.set("dead.acme-integrity.com", 500);
    const stream = await call("POST", "/v1/streams", { key: p.key, body: { type: "webhook", url: "https://dead.acme-integrity.com/x" } });
    expect(stream.status).toBe(201);
    await ingestMany(p.key, [{ action: "a" }]);
    const [fired] = await until(async () => {
      const list = await firings(p.key, rule.id);
      return list.length > 0 && list;
    });
    expect(fired.group).toBe(`stream_failing:${stream.json.data.id}`);
    expect(fired.reason).toMatch(/is failing: HTTP 500.*Next: /);
    expect(fired.deliveries).toEqual([]);
    // Deleted, so it stops retrying behind the file's later tests and past its end (the fake network is gone by then).
    expect((await call("DELETE", `/v1/streams/${stream.json.data.id}`, { key: p.key })).status).toBe(204);
  });

  it("a verify job that finds tampering pages the integrity channel", async () => {
    const p = await createProject();
    const rule = await integrityRule(p.key);
    const patched = await call("PATCH", `/v1/alerts/${rule.id}`, { key: p.key, body: { channels: [{ type: "webhook", url: `https://${HOOK}/integrity` }] } });
    expect(patched.status).toBe(200);
    const stored = await ingestMany(p.key, [{ action: "a" }, { action: "b" }, { action: "c" }]);
    await p.db.prepare("UPDATE events SET action = 'forged' WHERE id = ?").bind(stored[1].id).run();
    const created = await call("POST", "/v1/jobs", { key: p.key, body: { type: "verify" } });
    const job = await waitForJob(p.key, created.json.data.id);
    expect(job.result.ok).toBe(false);
    const [sent] = await until(async () => net.at(HOOK).length > 0 && net.at(HOOK));
    const body = JSON.parse(sent.body);
    expect(body.firing.reason).toContain(`Verify job ${job.id} found hash_mismatch at event ${stored[1].id}`);
    expect(body.firing.group).toBe(`verify_failed:${job.id}`);
  });

  it("a verify job that finds events hidden from lists says the events are intact and what to restore", async () => {
    const p = await createProject();
    const rule = await integrityRule(p.key);
    // A live batch of one action: its span and action set stand in for those rows' time and action index entries.
    const stored = await ingestMany(p.key, [{ action: "a" }, { action: "a" }, { action: "a" }]);
    await p.db.prepare("DELETE FROM action_sets WHERE project_id = ?").bind(p.id).run();
    const created = await call("POST", "/v1/jobs", { key: p.key, body: { type: "verify" } });
    const job = await waitForJob(p.key, created.json.data.id);
    expect(job.result.failure).toEqual({ event_id: stored[0].id, reason: "index_damaged", at: stored[0].occurred_at });
    const [fired] = await until(async () => {
      const list = await firings(p.key, rule.id);
      return list.length > 0 && list;
    });
    expect(fired.group).toBe(`verify_failed:${job.id}`);
    expect(fired.reason).toContain(`Verify job ${job.id} found index_damaged at event ${stored[0].id}: the event is intact`);
    expect(fired.reason).toMatch(/Next: Run npm run projects:reindex -- <project> \(with --archived when the event is archived\) to put the hidden events back/);
  });

  it("the daily cron's check warns of keys that expire within 7 days, once a day", async () => {
    const p = await createProject();
    const soon = await createScopedKey(p.id, ["read"], { expiresAt: new Date(Date.now() + 3 * 86_400_000).toISOString() });
    await createScopedKey(p.id, ["read"], { expiresAt: new Date(Date.now() + 30 * 86_400_000).toISOString() });
    const rule = await integrityRule(p.key);
    // The check alone, as the shard-pressure case below: the whole cron would also wake every ledger and job of the
    // runtime, whose work outlived the file (test/auth/key-audit.test.ts runs the whole cron).
    expect(await signalExpiringKeys(env, new Date())).toBeGreaterThanOrEqual(1);
    await signalExpiringKeys(env, new Date());
    const list = await firings(p.key, rule.id);
    expect(list.map((f: any) => f.group)).toEqual([`key_expiring:${soon.prefix}`]);
    expect(list[0].reason).toMatch(/expires at .*Next: Create its replacement/);
  });

  it("tells the operator's project when an event shard passes 80% of its mark, once a day per shard, and nothing without one", async () => {
    const operator = await createProject();
    const rule = await integrityRule(operator.key);
    expect(await signalShardPressure(env)).toBe(0);
    // A mark the shards' present size is past: both shards are "filling".
    await env.DB.prepare("INSERT INTO shards (shard, high_water_bytes) VALUES (0, 1000), (1, 1000) ON CONFLICT (shard) DO UPDATE SET high_water_bytes = 1000").run();
    try {
      const withOperator = { ...env, OPERATOR_PROJECT: operator.id } as Env;
      expect(await signalShardPressure(withOperator)).toBe(2);
      await signalShardPressure(withOperator);
      const list = await until(async () => {
        const got = await firings(operator.key, rule.id);
        return got.length >= 2 ? got : null;
      });
      expect(list.map((f: any) => f.group).sort()).toEqual(["shard_filling:shard-0", "shard_filling:shard-1"]);
      expect(list[0].reason).toMatch(/Event shard \d holds [\d,]+ bytes, \d+% of its high-water mark of 1,000.*Next: Add a shard/);
    } finally {
      await env.DB.prepare("UPDATE shards SET high_water_bytes = NULL").run();
    }
  });
});
