import { env, runDurableObjectAlarm } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import { readSegment, type Segment } from "../../src/storage/archive-segments";
import { shardSize } from "../../src/storage/shard-pressure";
import { call, createProject, ingestMany } from "../helpers";
import { alarmsUntil } from "./archive-helpers";

const events = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({ action: `doc.${tag}`, actor: { id: `u_${i % 7}`, name: `User ${i % 7}` }, metadata: { i, note: "x".repeat(200) } }));

async function setMark(shard: number, bytes: number | null) {
  await env.DB.prepare("INSERT INTO shards (shard, high_water_bytes) VALUES (?1, ?2) ON CONFLICT (shard) DO UPDATE SET high_water_bytes = ?2").bind(shard, bytes).run();
}

async function tiers(db: D1Database, projectId: string) {
  const hot = await db.prepare("SELECT seq FROM events WHERE project_id = ? ORDER BY seq").bind(projectId).raw<[number]>();
  const { results } = await db.prepare("SELECT * FROM archive_segments WHERE project_id = ? ORDER BY first_seq").bind(projectId).all<Segment>();
  return { hot: hot.map((r) => r[0]), segments: results };
}

/** Every seq of the project once, hot or archived, and in one tier only. */
async function allSeqs(db: D1Database, projectId: string) {
  const { hot, segments } = await tiers(db, projectId);
  const archived = (await Promise.all(segments.map((s) => readSegment(env, s)))).flat().map((r) => r.seq);
  return [...archived, ...hot];
}

afterEach(async () => {
  await setMark(0, null);
  await setMark(1, null);
  vi.restoreAllMocks();
});

describe("shards that never fill", () => {
  it("places new projects by free bytes, with the default hot window", async () => {
    await setMark(1, 1);
    const a = await createProject();
    expect(a.shard).toBe(0);
    await setMark(1, null);
    await setMark(0, 1);
    const b = await createProject();
    expect(b.shard).toBe(1);
    const row = await env.DB.prepare("SELECT hot_days FROM projects WHERE id = ?").bind(b.id).first<{ hot_days: number }>();
    expect(row!.hot_days).toBe(30);
    // Placing measures every shard and records it for operators (projects:list).
    const { results } = await env.DB.prepare("SELECT shard, size_bytes FROM shards ORDER BY shard").all<{ shard: number; size_bytes: number }>();
    expect(results.map((r) => r.shard)).toEqual([0, 1]);
    expect(results.every((r) => r.size_bytes > 0)).toBe(true);
  });

  it("takes a long ingest over a tiny high-water mark without a failed write, archiving its largest project first, and ends under the mark", async () => {
    const big = await createProject(undefined, { shard: 1 });
    const small = await createProject(undefined, { shard: 1 });
    await ingestMany(small.key, events(20, "small"));
    const mark = (await shardSize(env, 1)) + 400_000;
    await setMark(1, mark);
    const errors = vi.spyOn(console, "error");
    const warnings = vi.spyOn(console, "warn");

    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await call("POST", "/v1/events/batch", { key: big.key, body: { events: events(100, `big${i}`) } });
      statuses.push(res.status);
      // The ledger's alarm measures the shard (the runtime fires it on its own, within a minute of a commit; here at once).
      await runDurableObjectAlarm(ledgerOf(env, big.id));
      await alarmsUntil(big.id, async () => (await shardSize(env, 1)) <= mark);
    }
    expect(statuses.every((s) => s === 201)).toBe(true);
    await alarmsUntil(big.id, async () => (await shardSize(env, 1)) <= mark);
    expect(await shardSize(env, 1)).toBeLessThanOrEqual(mark);

    // The largest project gave way; the small one kept its events hot.
    expect((await tiers(small.db, small.id)).hot.length).toBe(20);
    const { segments } = await tiers(big.db, big.id);
    expect(segments.length).toBeGreaterThan(0);
    // Nothing lost, nothing twice: every event once, in one tier, and the chain verifies across both.
    expect(await allSeqs(big.db, big.id)).toEqual(Array.from({ length: 1200 }, (_, i) => i + 1));
    expect((await call("GET", "/v1/events/verify", { key: big.key })).json.data).toMatchObject({ ok: true, verified: 1200 });
    // Operators saw it coming: a log line past 80% of the mark, and the size recorded for projects:list.
    const lines = [...errors.mock.calls, ...warnings.mock.calls].map((c) => String(c[0]));
    expect(lines.some((l) => l.startsWith("shard 1 holds") && l.includes("add a shard"))).toBe(true);
    expect(lines.some((l) => l.startsWith("shard 1 holds") && l.includes("archiving more until it is back under"))).toBe(true);
    const recorded = await env.DB.prepare("SELECT size_bytes, high_water_bytes FROM shards WHERE shard = 1").first<{ size_bytes: number; high_water_bytes: number }>();
    expect(recorded).toMatchObject({ high_water_bytes: mark });
    expect(recorded!.size_bytes).toBeGreaterThan(0);
  }, 60_000);

  it("resumes after a crash between a segment's object and its index row, from the ledger's alarm", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(25, "crash"));
    await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(p.id).run();
    const ledger = ledgerOf(env, p.id);
    const failed = await ledger.archiveSegment(new Date().toISOString(), { segmentRows: 10, failAfterPut: true }).catch((e: Error) => e);
    expect(String(failed)).toContain("injected failure");
    // The object is in R2, its index row is not: every event is still hot.
    expect((await env.ARCHIVE.list({ prefix: `archive/${p.id}/` })).objects.length).toBe(3);
    expect((await tiers(p.db, p.id)).hot.length).toBe(25);

    // The daily check wakes the ledger; its alarm seals again under the same key, then sweeps.
    await ledger.archiveSoon();
    await alarmsUntil(p.id, async () => (await tiers(p.db, p.id)).hot.length === 0);
    expect((await tiers(p.db, p.id)).segments.map((s) => [s.first_seq, s.last_seq])).toEqual([[1, 25]]);
    expect(await allSeqs(p.db, p.id)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
    expect((await env.ARCHIVE.list({ prefix: `archive/${p.id}/` })).objects.length).toBe(3);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 25 });
  });

  it("seals whole segments in routine steps, and a part of one only a day after it was due", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(25, "routine"));
    await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(p.id).run();
    const ledger = ledgerOf(env, p.id);
    const step = (at: number) => ledger.archiveSegment(new Date(at).toISOString(), { mode: "routine", segmentRows: 10 });
    const now = Date.now();
    expect(await step(now)).toEqual({ archived: 10, done: false });
    expect(await step(now)).toEqual({ archived: 10, done: false });
    expect(await step(now)).toEqual({ archived: 0, done: true });
    expect(await step(now + 86_400_000 + 60_000)).toEqual({ archived: 5, done: true });
    expect(await allSeqs(p.db, p.id)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
  });
});
