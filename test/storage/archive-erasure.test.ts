import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import { readSegment, type Segment } from "../../src/storage/archive-segments";
import { call, createProject, ingestMany } from "../helpers";
import { eraseApplied } from "../chain/erasure-helpers";

const events = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ action: "doc.read", actor: { id: `u_${i % 4}`, name: `User ${i % 4}`, email: `u${i % 4}@example.com` }, metadata: { i } }));

/** Everything but the last `hot` events archived, in segments of `rows`. */
async function archiveAllBut(projectId: string, key: string, hot: number, rows: number) {
  await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(projectId).run();
  const ledger = ledgerOf(env, projectId);
  for (let i = 0; i < 100; i++) if ((await ledger.archiveSegment(new Date().toISOString(), { segmentRows: rows })).done) break;
  await env.DB.prepare("UPDATE projects SET hot_days = NULL WHERE id = ?").bind(projectId).run();
  return ingestMany(key, events(hot));
}

async function segmentsOf(db: D1Database, projectId: string) {
  return (await db.prepare("SELECT * FROM archive_segments WHERE project_id = ? ORDER BY first_seq").bind(projectId).all<Segment>()).results;
}

describe("archived events: receipts and erasure", () => {
  it("signs valid receipts for archived events, privately and publicly", async () => {
    const p = await createProject();
    const old = await ingestMany(p.key, events(30));
    await archiveAllBut(p.id, p.key, 5, 10);
    for (const e of [old[0], old[9], old[10], old[29]]) {
      const receipt = await call("GET", `/v1/events/${e.id}/receipt`, { key: p.key });
      expect(receipt.status, e.id).toBe(200);
      expect(receipt.json.data).toMatchObject({ event_id: e.id, seq: e.seq, valid: true });
      const status = await call("GET", `/v1/receipts/${e.id}`);
      expect(status.status).toBe(200);
      expect(status.json.data).toMatchObject({ event_id: e.id, valid: true });
    }
  });

  it("erases an actor in archived segments too, and verify stays ok", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(40));
    await archiveAllBut(p.id, p.key, 8, 15);
    const before = await segmentsOf(p.db, p.id);
    const erased = await eraseApplied(p.key, "/v1/actors/u_1");
    expect(erased.status).toBe(202);

    const after = await segmentsOf(p.db, p.id);
    expect(after.map((s) => [s.first_seq, s.last_seq, s.count])).toEqual(before.map((s) => [s.first_seq, s.last_seq, s.count]));
    const rows = (await Promise.all(after.map((s) => readSegment(env, s)))).flat();
    expect(rows.filter((r) => r.actor_name === "User 1" || r.actor_email === "u1@example.com")).toEqual([]);
    expect(rows.filter((r) => r.anonymized_at !== null).length).toBe(10);
    // The rewritten objects replace the old ones: the old keys are gone from the bucket.
    for (const s of before) if (!after.some((a) => a.object_key === s.object_key)) expect(await env.ARCHIVE.get(s.object_key)).toBeNull();

    const verify = (await call("GET", "/v1/events/verify", { key: p.key })).json.data;
    // 36 events and the erasure's own record (witness.actor.erased).
    expect(verify).toMatchObject({ ok: true, anonymized: 12, verified: 37 });
    const exported = JSON.parse((await call("GET", "/v1/exports?format=json", { key: p.key })).text);
    expect(exported.length).toBe(49);
    expect(exported.filter((e: { actor: { name: string } | null }) => e.actor?.name === "User 1")).toEqual([]);
  });
});
