import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import { checkArchives } from "../../src/storage/archive-check";
import { readSegment, type Segment } from "../../src/storage/archive-segments";
import { call, createProject, ingestMany, parseCsv } from "../helpers";
import { alarmsUntil } from "./archive-helpers";

const events = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({ action: `doc.${tag}`, actor: { id: `u_${i % 5}`, name: `User ${i % 5}` }, metadata: { i } }));

async function setHotDays(projectId: string, days: number | null) {
  await env.DB.prepare("UPDATE projects SET hot_days = ? WHERE id = ?").bind(days, projectId).run();
}

async function tiers(db: D1Database, projectId: string) {
  const hot = await db.prepare("SELECT count(*) AS n FROM events WHERE project_id = ?").bind(projectId).first<{ n: number }>();
  const { results } = await db.prepare("SELECT * FROM archive_segments WHERE project_id = ? ORDER BY first_seq").bind(projectId).all<Segment>();
  return { hot: hot!.n, segments: results };
}

/** Archives until nothing more is due, in segments of `rows`. */
async function archiveAll(projectId: string, rows: number) {
  const ledger = ledgerOf(env, projectId);
  for (let i = 0; i < 100; i++) if ((await ledger.archiveSegment(new Date().toISOString(), { segmentRows: rows })).done) return;
  throw new Error("archiving did not finish");
}

async function verify(key: string) {
  return (await call("GET", "/v1/events/verify", { key })).json.data;
}

describe("cold archive", () => {
  it("survives a failure between the object write and the row delete: no loss, no duplicates", async () => {
    const p = await createProject();
    const stored = await ingestMany(p.key, events(250, "cold"));
    await setHotDays(p.id, 0);
    const ledger = ledgerOf(env, p.id);
    const failed = await ledger.archiveSegment(new Date().toISOString(), { segmentRows: 100, failAfterPut: true }).then(
      () => null,
      (e: Error) => e,
    );
    expect(failed?.message).toContain("injected failure");
    // The object was written, but no index row and no delete: everything is still hot.
    expect(await env.ARCHIVE.get(`archive/${p.id}/000000000001.jsonl.gz`)).not.toBeNull();
    expect(await tiers(p.db, p.id)).toEqual({ hot: 250, segments: [] });

    await archiveAll(p.id, 100);
    const { hot, segments } = await tiers(p.db, p.id);
    expect(hot).toBe(0);
    expect(segments.map((s) => [s.first_seq, s.last_seq, s.count])).toEqual([[1, 100, 100], [101, 200, 100], [201, 250, 50]]);
    const archived = (await Promise.all(segments.map((s) => readSegment(env, s)))).flat();
    expect(archived.map((r) => r.seq)).toEqual(stored.map((e) => e.seq));
    expect(segments.every((s) => s.bytes > 0 && /^[0-9a-f]{64}$/.test(s.sha256))).toBe(true);

    // A re-run finds nothing more to do.
    await archiveAll(p.id, 100);
    expect((await tiers(p.db, p.id)).segments.length).toBe(3);
    expect(await verify(p.key)).toMatchObject({ ok: true, verified: 250 });
  });

  it("answers get and verify across both tiers, and keeps the hot window hot", async () => {
    const p = await createProject();
    const old = await ingestMany(p.key, events(120, "old"));
    await setHotDays(p.id, 0);
    await archiveAll(p.id, 50);
    await setHotDays(p.id, 30);
    const fresh = await ingestMany(p.key, events(30, "fresh"));
    await archiveAll(p.id, 50); // received today: inside a 30-day window
    expect((await tiers(p.db, p.id)).hot).toBe(30);

    const got = await call("GET", `/v1/events/${old[7].id}`, { key: p.key });
    expect(got.status).toBe(200);
    expect(got.json.data).toEqual(old[7]);
    expect((await call("GET", `/v1/events/${fresh[0].id}`, { key: p.key })).json.data).toEqual(fresh[0]);
    expect((await call("GET", "/v1/events/0190a5f0-0000-7000-8000-000000000000", { key: p.key })).status).toBe(404);

    expect(await verify(p.key)).toMatchObject({ ok: true, verified: 150 });
    // List and search span both tiers, and say where the hot window starts.
    const segments = (await tiers(p.db, p.id)).segments;
    for (const [path, rows] of [["/v1/events?limit=200", 150], ["/v1/events/search?q=doc&limit=200", 150]] as const) {
      const page = await call("GET", path, { key: p.key });
      expect(page.json.data.length).toBe(rows);
      expect(page.json.nextCursor).toBeNull();
      expect(page.json.hot_since).toBe(segments[segments.length - 1].last_received_at);
    }
    // A window across the boundary links its first row to an archived predecessor.
    const from = encodeURIComponent(old[100].occurred_at);
    const windowed = (await call("GET", `/v1/events/verify?from=${from}`, { key: p.key })).json.data;
    expect(windowed).toMatchObject({ ok: true });
    expect(windowed.verified).toBeGreaterThanOrEqual(50);
  });

  it("exports both tiers in CSV and JSON, with filters, each event once", async () => {
    const p = await createProject();
    const old = await ingestMany(p.key, events(60, "old"));
    await setHotDays(p.id, 0);
    await archiveAll(p.id, 25);
    await setHotDays(p.id, null);
    const fresh = await ingestMany(p.key, events(10, "fresh"));
    const all = [...fresh].reverse().concat([...old].reverse());

    const json = await call("GET", "/v1/exports?format=json", { key: p.key });
    expect(json.status).toBe(200);
    expect(JSON.parse(json.text)).toEqual(all);
    const csv = parseCsv((await call("GET", "/v1/exports?format=csv", { key: p.key })).text);
    expect(csv.slice(1).map((r) => r[0])).toEqual(all.map((e) => e.id));

    const byActor = JSON.parse((await call("GET", "/v1/exports?format=json&actor_id=u_2", { key: p.key })).text);
    expect(byActor.map((e: { id: string }) => e.id)).toEqual(all.filter((e) => e.actor.id === "u_2").map((e) => e.id));
    const byAction = JSON.parse((await call("GET", "/v1/exports?format=json&action=doc.old", { key: p.key })).text);
    expect(byAction.length).toBe(60);
    const excluded = JSON.parse((await call("GET", "/v1/exports?format=json&actions_exclude=doc.fresh", { key: p.key })).text);
    expect(excluded.length).toBe(60);
    const from = old[40].occurred_at;
    const to = fresh[2].occurred_at;
    const windowed = JSON.parse((await call("GET", `/v1/exports?format=json&date_from=${encodeURIComponent(from)}&date_to=${encodeURIComponent(to)}`, { key: p.key })).text);
    expect(windowed.map((e: { id: string }) => e.id)).toEqual(all.filter((e) => e.occurred_at >= from && e.occurred_at <= to).map((e) => e.id));
  });

  it("reports a tampered segment", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(20, "tamper"));
    await setHotDays(p.id, 0);
    await archiveAll(p.id, 100);
    const [segment] = (await tiers(p.db, p.id)).segments;
    await env.ARCHIVE.put(segment.object_key, new Uint8Array([1, 2, 3]));
    const res = await call("GET", "/v1/events/verify", { key: p.key });
    // Reported in the result, not a 500 (test/storage/archive-damage.test.ts has the rest).
    expect(res.status).toBe(200);
    expect(res.json.data).toMatchObject({ ok: false, verified: 0, failure: { reason: "archive_damaged" } });
  });

  it("is woken by the daily check for projects behind their window, runs in the ledger's alarm, and moves with the project", async () => {
    const p = await createProject(undefined, { shard: 0 });
    const other = await createProject();
    await ingestMany(p.key, events(40, "cron"));
    await ingestMany(other.key, events(10, "cron"));
    expect(Object.keys((await call("GET", "/v1/events", { key: other.key })).json)).toEqual(["data", "nextCursor"]);
    await setHotDays(p.id, 0);
    expect((await checkArchives(env, new Date())).woken).toBeGreaterThanOrEqual(1);
    await alarmsUntil(p.id, async () => (await tiers(p.db, p.id)).hot === 0);
    expect((await tiers(other.db, other.id)).hot).toBe(10);

    const [sealed] = (await tiers(p.db, p.id)).segments;
    await env.DB.prepare("UPDATE projects SET move_to = 1 WHERE id = ?").bind(p.id).run();
    for (let i = 0; i < 50; i++) if ((await ledgerOf(env, p.id).moveShard(1, { drainSeconds: 0 })).status === "done") break;
    // The index row moves whole, export companions' hashes included (the objects stay in R2).
    expect((await tiers(env.EVENTS_1, p.id)).segments).toEqual([sealed]);
    expect(sealed.csv_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect((await tiers(env.EVENTS_0, p.id)).segments.length).toBe(0);
    expect(await verify(p.key)).toMatchObject({ ok: true, verified: 40 });
  });
});
