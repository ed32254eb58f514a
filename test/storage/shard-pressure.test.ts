import { env, runDurableObjectAlarm } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import { readSegment, type Segment } from "../../src/storage/archive-segments";
import { HOT_ROW_OVERHEAD_BYTES, measureShard, shardSize } from "../../src/storage/shard-pressure";
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

describe("a shard measured by the bytes it holds, not its file", () => {
  async function record(shard: number, fileBytes: number, freed: number) {
    await env.DB.prepare(
      "INSERT INTO shards (shard, size_bytes, measured_at, freed_bytes) VALUES (?1, ?2, '2000-01-01T00:00:00.000Z', ?3) " +
        "ON CONFLICT (shard) DO UPDATE SET size_bytes = ?2, measured_at = '2000-01-01T00:00:00.000Z', freed_bytes = ?3",
    )
      .bind(shard, fileBytes, freed)
      .run();
  }
  const freedNow = async (shard: number) => (await env.DB.prepare("SELECT freed_bytes AS f FROM shards WHERE shard = ?").bind(shard).first<{ f: number }>())!.f;

  it("counts freed pages out until the file grows, and what the file gave back once", async () => {
    // A file of 54 MB whose rows were mostly deleted: 50 MB of it is free pages.
    await record(1, 54_000_000, 50_000_000);
    expect(await measureShard(env, 1, 54_000_000)).toMatchObject({ size: 4_000_000, file: 54_000_000 });
    // Within the record's 10 s, the same rule against the record: the file shrank by 10 MB, so 40 MB are still free.
    expect(await measureShard(env, 1, 44_000_000)).toMatchObject({ size: 4_000_000, file: 44_000_000 });
    // Recorded again: the shrink is taken off the estimate for good.
    await env.DB.prepare("UPDATE shards SET measured_at = '2000-01-01T00:00:00.000Z' WHERE shard = 1").run();
    expect(await measureShard(env, 1, 44_000_000)).toMatchObject({ size: 4_000_000 });
    expect(await freedNow(1)).toBe(40_000_000);
    // A file that grew had no free page left: the measure is the file itself, and the estimate starts again from 0.
    await env.DB.prepare("UPDATE shards SET measured_at = '2000-01-01T00:00:00.000Z' WHERE shard = 1").run();
    expect(await measureShard(env, 1, 44_100_000)).toMatchObject({ size: 44_100_000, file: 44_100_000 });
    expect(await freedNow(1)).toBe(0);
    // Never below nothing.
    await record(1, 1_000, 5_000);
    expect((await measureShard(env, 1, 1_000)).size).toBe(0);
    await record(1, 0, 0);
  });

  it("records what archiving frees, so a shard whose events all went to the archive counts as nearly empty", async () => {
    const p = await createProject(undefined, { shard: 1 });
    // Measures while it runs (the ledger's alarms) must not record a new size over the estimate: a record from the future.
    await record(1, 1_000_000_000, 0);
    await env.DB.prepare("UPDATE shards SET measured_at = '9999-01-01T00:00:00.000Z' WHERE shard = 1").run();
    const before = await freedNow(1);
    await ingestMany(p.key, events(300, "freed"));
    await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(p.id).run();
    const ledger = ledgerOf(env, p.id);
    for (let i = 0; i < 10; i++) if ((await ledger.archiveSegment(new Date().toISOString(), { segmentRows: 100 })).done) break;
    expect((await tiers(p.db, p.id)).hot).toEqual([]);
    // 300 rows of ~600 bytes of JSON (200 of them a note) and their index entries: about 390 KB, less the three summaries.
    const freed = (await freedNow(1)) - before;
    expect(freed).toBeGreaterThan(300 * (HOT_ROW_OVERHEAD_BYTES + 200));
    expect(freed).toBeLessThan(300 * (HOT_ROW_OVERHEAD_BYTES + 2_000));
    await record(1, 0, 0);
  });
});
