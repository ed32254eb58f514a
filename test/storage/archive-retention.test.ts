import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import { purgeExpiredEvents } from "../../src/chain/retention";
import { call, createProject, ingestMany } from "../helpers";

const DAY = 86_400_000;
const batch = (n: number, action: string, occurredAt: string) =>
  Array.from({ length: n }, (_, i) => ({ action, actor: { id: `u_${i % 3}` }, occurred_at: occurredAt, metadata: { i } }));

async function archiveAll(projectId: string, rows: number) {
  await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(projectId).run();
  for (let i = 0; i < 100; i++) if ((await ledgerOf(env, projectId).archiveSegment(new Date().toISOString(), { segmentRows: rows })).done) return;
}

async function state(db: D1Database, projectId: string) {
  const q = (sql: string) => db.prepare(sql).bind(projectId).first<{ n: number }>().then((r) => r!.n);
  return {
    hot: await q("SELECT count(*) AS n FROM events WHERE project_id = ?"),
    segments: await q("SELECT count(*) AS n FROM archive_segments WHERE project_id = ?"),
    archived: await q("SELECT coalesce(sum(count), 0) AS n FROM archive_segments WHERE project_id = ?"),
  };
}

describe("retention across tiers", () => {
  it("purges archived events, leaves signed gap records, and verify stays ok", async () => {
    const p = await createProject();
    await ingestMany(p.key, batch(20, "doc.old", new Date(Date.now() - 10 * DAY).toISOString()));
    await ingestMany(p.key, batch(10, "doc.new", new Date().toISOString()));
    await archiveAll(p.id, 15);
    expect(await state(p.db, p.id)).toEqual({ hot: 0, segments: 2, archived: 30 });
    const keys = (await env.ARCHIVE.list({ prefix: `archive/${p.id}/` })).objects.map((o) => o.key);
    // Each segment with its CSV and JSON export companions: a restore must leave none of them behind.
    expect(keys.length).toBe(6);

    expect((await call("PUT", "/v1/retention", { key: p.key, body: { rules: [{ pattern: "*", days: 5 }] } })).status).toBe(200);
    await purgeExpiredEvents(env, new Date());
    // Both segments held expired events: brought back, purged; the 10 kept events are hot until the next archive run,
    // with the plan change's own record (witness.retention.changed).
    expect(await state(p.db, p.id)).toEqual({ hot: 11, segments: 0, archived: 0 });
    for (const key of keys) expect(await env.ARCHIVE.get(key)).toBeNull();

    const verify = (await call("GET", "/v1/events/verify", { key: p.key })).json.data;
    expect(verify).toMatchObject({ ok: true, verified: 11 });
    expect(verify.gaps).toMatchObject([{ first_seq: 1, last_seq: 20, purged_count: 20, reason: "plan_retention" }]);

    await archiveAll(p.id, 15);
    expect(await state(p.db, p.id)).toEqual({ hot: 0, segments: 1, archived: 11 });
    const again = (await call("GET", "/v1/events/verify", { key: p.key })).json.data;
    expect(again).toMatchObject({ ok: true, verified: 11 });
    expect(again.gaps.length).toBe(1);
  });

  it("leaves segments without expired events alone", async () => {
    const p = await createProject();
    await ingestMany(p.key, batch(12, "doc.keep", new Date().toISOString()));
    await archiveAll(p.id, 5);
    expect((await call("PUT", "/v1/retention", { key: p.key, body: { rules: [{ pattern: "debug.*", days: 1 }] } })).status).toBe(200);
    await purgeExpiredEvents(env, new Date());
    expect(await state(p.db, p.id)).toEqual({ hot: 1, segments: 3, archived: 12 });
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 13 });
  });
});
