import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { generateApiKey } from "../../src/auth/api-keys";
import worker from "../../src/index";
import { call, createProject, ingest } from "../helpers";

/** The daily cron, as Cloudflare invokes it. */
async function cron() {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ scheduledTime: new Date(), cron: "17 3 * * *" }), env, ctx);
  await waitOnExecutionContext(ctx);
}

/** A key as `npm run keys:create` writes it (src/scripts/lib.mjs createKey): straight into D1, audit_state NULL. */
async function scriptKey(projectId: string, scopes: string, label: string | null, createdAt: string) {
  const { key, prefix, secretHash } = await generateApiKey();
  await env.DB.prepare("INSERT INTO api_keys (prefix, project_id, secret_hash, created_at, scopes, label) VALUES (?, ?, ?, ?, ?, ?)")
    .bind(prefix, projectId, secretHash, createdAt, scopes, label)
    .run();
  return { key, prefix };
}

/** What `npm run keys:revoke` does: revoked_at in D1, nothing else. */
async function scriptRevoke(prefix: string) {
  const at = new Date().toISOString();
  await env.DB.prepare("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE prefix = ?").bind(at, prefix).run();
  return at;
}

/** The project's events about keys, oldest first, read through the API. */
async function keyEvents(adminKey: string) {
  const res = await call("GET", "/v1/events?limit=100", { key: adminKey });
  expect(res.status).toBe(200);
  return (res.json.data as any[]).filter((e) => e.action.startsWith("witness.key.")).reverse();
}

async function verifyOk(adminKey: string) {
  const res = await call("GET", "/v1/events/verify", { key: adminKey });
  expect(res.status).toBe(200);
  expect(res.json.data).toMatchObject({ ok: true, failure: null });
  return res.json.data;
}

describe("the daily sweep records keys the operator scripts made or revoked", () => {
  it("appends witness.key.created for a script-made key once, however many sweeps run", async () => {
    const p = await createProject();
    await ingest(p.key, { action: "invoice.paid" });
    const createdAt = new Date(Date.now() - 3_600_000).toISOString();
    const made = await scriptKey(p.id, "ingest", "billing servers", createdAt);

    await cron();
    await cron();

    const events = await keyEvents(p.key);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      action: "witness.key.created",
      actor: { id: "operator-script", type: "operator" },
      targets: [{ type: "api_key", id: made.prefix, name: "billing servers" }],
      // Recorded late, and saying so: when the script made it, not only when the sweep saw it.
      metadata: { scopes: ["ingest"], created_at: createdAt, expires_at: null, recorded_by: "daily-key-sweep" },
      user_agent: "witness-cron",
    });
    expect(events[0].seq).toBe(2);
    expect(JSON.stringify(events[0])).not.toContain(made.key.split("_")[3]);
    expect(await verifyOk(p.key)).toMatchObject({ verified: 2 });
    const row = await env.DB.prepare("SELECT audit_state FROM api_keys WHERE prefix = ?").bind(made.prefix).first();
    expect(row).toEqual({ audit_state: "created" });
  });

  it("appends witness.key.revoked after keys:revoke, once, and verify passes", async () => {
    const p = await createProject();
    const made = await scriptKey(p.id, "read", null, new Date().toISOString());
    await cron();
    const revokedAt = await scriptRevoke(made.prefix);
    await cron();
    await cron();

    // Keys made and revoked through /v1/keys recorded their own events: the sweep adds none for them.
    const viaApi = await call("POST", "/v1/keys", { key: p.key, body: { scopes: ["ingest"], label: "api-made" } });
    expect(viaApi.status).toBe(201);
    expect((await call("DELETE", `/v1/keys/${viaApi.json.data.prefix}`, { key: p.key })).status).toBe(200);
    await cron();

    const events = await keyEvents(p.key);
    expect(events.map((e) => [e.action, e.actor.type, e.targets[0].id])).toEqual([
      ["witness.key.created", "operator", made.prefix],
      ["witness.key.revoked", "operator", made.prefix],
      ["witness.key.created", "api_key", viaApi.json.data.prefix],
      ["witness.key.revoked", "api_key", viaApi.json.data.prefix],
    ]);
    expect(events[1]).toMatchObject({
      actor: { id: "operator-script", type: "operator" },
      targets: [{ type: "api_key", id: made.prefix, name: null }],
      metadata: { scopes: ["read"], revoked_at: revokedAt, recorded_by: "daily-key-sweep" },
    });
    await verifyOk(p.key);
  });

  it("records a key made and revoked between two sweeps (or before self-audit existed) as created, then revoked", async () => {
    const p = await createProject();
    const old = await scriptKey(p.id, "admin", null, "2024-02-01T00:00:00.000Z");
    await scriptRevoke(old.prefix);
    await cron();
    const events = await keyEvents(p.key);
    expect(events.map((e) => [e.action, e.targets[0].id])).toEqual([
      ["witness.key.created", old.prefix],
      ["witness.key.revoked", old.prefix],
    ]);
    expect(events[0].metadata.created_at).toBe("2024-02-01T00:00:00.000Z");
    await verifyOk(p.key);
  });
});
