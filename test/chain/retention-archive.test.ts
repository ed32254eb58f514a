import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import { purgeExpiredEvents } from "../../src/chain/retention";
import { segmentObjects } from "../../src/storage/archive-companions";
import { call, createProject, ingestMany } from "../helpers";
import { archiveAll, segmentsOf } from "../storage/archive-helpers";
import { ago, archivedSeqs, batch, count, gapRows, ledgerKv, objectKeys, plan, purgeSteps, verify, halfExpiredSegment } from "../storage/retention-helpers";

/** Tidy archive steps until the archiver is done: its backfills and sweep (src/storage/archive-run.ts). */
async function tidySteps(projectId: string): Promise<number> {
  for (let i = 1; i <= 10; i++) if ((await ledgerOf(env, projectId).archiveSegment(new Date().toISOString())).done) return i;
  return Infinity;
}

/** Issue 22, item 4: retention retires archived segments whole or rewrites them, and never restores them into D1. */
describe("retention across tiers", () => {
  it("retires whole expired segments without restoring them: one gap record, and nothing of them left", async () => {
    const p = await createProject();
    const old = await ingestMany(p.key, batch(30, "doc.old", ago(10)));
    await ingestMany(p.key, batch(10, "doc.new", ago(0)));
    await archiveAll(p.id, 10);
    const before = await segmentsOf(p.db, p.id);
    expect(before.map((s) => s.first_seq)).toEqual([1, 11, 21, 31]);
    await plan(p.key, [{ pattern: "*", days: 5 }]);
    const hot = await count(p.db, "events WHERE project_id = ?", p.id);

    // D1's events never grow: nothing is brought back.
    const { purged } = await purgeSteps(p.id, async () => expect(await count(p.db, "events WHERE project_id = ?", p.id)).toBe(hot));
    expect(purged).toBe(30);

    const after = await segmentsOf(p.db, p.id);
    expect(after.map((s) => s.first_seq)).toEqual([31]);
    expect(await archivedSeqs(p.db, p.id)).toEqual(Array.from({ length: 10 }, (_, i) => 31 + i));
    expect(await count(p.db, "archive_summaries WHERE project_id = ? AND first_seq < 31", p.id)).toBe(0);
    expect(await objectKeys(p.id)).toEqual(segmentObjects(after[0].object_key).sort());
    expect(await gapRows(p.db, p.id)).toEqual([{ first_seq: 1, last_seq: 30, purged_count: 30 }]);
    expect((await call("GET", `/v1/events/${old[12].id}`, { key: p.key })).status).toBe(404);

    const result = await verify(p.key);
    expect(result).toMatchObject({ ok: true, verified: 11 });
    expect(result.gaps).toMatchObject([{ first_seq: 1, last_seq: 30, purged_count: 30, reason: "plan_retention" }]);
  });

  it("describes a hole across two retired segments and the hot rows after them with one gap record", async () => {
    const p = await createProject();
    await ingestMany(p.key, batch(20, "doc.old", ago(10)));
    await archiveAll(p.id, 10);
    await ingestMany(p.key, batch(5, "doc.old", ago(10)));
    await ingestMany(p.key, batch(5, "doc.new", ago(0)));
    await plan(p.key, [{ pattern: "*", days: 5 }]);
    await purgeExpiredEvents(env, new Date());

    expect(await segmentsOf(p.db, p.id)).toEqual([]);
    expect(await objectKeys(p.id)).toEqual([]);
    expect(await gapRows(p.db, p.id)).toEqual([{ first_seq: 1, last_seq: 25, purged_count: 25 }]);
    expect(await verify(p.key)).toMatchObject({ ok: true, verified: 6, gaps: [{ first_seq: 1, last_seq: 25, reason: "plan_retention" }] });
  });

  it("rewrites a partly expired segment without its expired rows, then retires it once the rest expires", async () => {
    const { p, stored, original } = await halfExpiredSegment();
    await purgeExpiredEvents(env, new Date());

    const [rewritten] = await segmentsOf(p.db, p.id);
    expect(rewritten).toMatchObject({ first_seq: 1, last_seq: 10, count: 5 });
    expect(rewritten.object_key).toBe(original.object_key.replace(/\.jsonl\.gz$/, ".r5.jsonl.gz"));
    expect(await objectKeys(p.id)).toEqual(segmentObjects(rewritten.object_key).sort());
    expect(await archivedSeqs(p.db, p.id)).toEqual([2, 4, 6, 8, 10]);
    expect(await count(p.db, "archive_summaries WHERE project_id = ? AND sha256 = ?", p.id, original.sha256)).toBe(0);
    expect(await count(p.db, "events WHERE project_id = ?", p.id)).toBe(1);
    // The ledger vouches for the companions it rendered, so exports may serve them.
    const record = await ledgerKv(p.id, (_kv, sql) => sql.exec("SELECT csv_sha256 FROM archive_companions WHERE segment_sha256 = ?", rewritten.sha256).toArray());
    expect(record).toEqual([{ csv_sha256: rewritten.csv_sha256 }]);

    for (const [i, e] of stored.entries()) expect((await call("GET", `/v1/events/${e.id}`, { key: p.key })).status, `seq ${i + 1}`).toBe(i % 2 === 0 ? 404 : 200);
    const listed = ((await call("GET", "/v1/events?limit=50", { key: p.key })).json.data as Array<{ id: string }>).map((e) => e.id);
    expect(listed).toEqual(expect.arrayContaining(stored.filter((_, i) => i % 2 === 1).map((e) => e.id)));
    expect(listed.filter((id) => stored.some((e, i) => i % 2 === 0 && e.id === id))).toEqual([]);
    const first = await verify(p.key);
    expect(first).toMatchObject({ ok: true, verified: 6 });
    expect(first.gaps.map((g: { first_seq: number }) => g.first_seq)).toEqual([1, 3, 5, 7, 9]);
    // Its first row is gone, its identity stays: the archiver's tidy pass finds nothing to backfill in it but its summary.
    const steps = await tidySteps(p.id);
    expect(steps).toBeLessThanOrEqual(2);
    expect(await segmentsOf(p.db, p.id)).toEqual([rewritten]);

    await plan(p.key, [{ pattern: "*", days: 5 }]);
    await purgeExpiredEvents(env, new Date());
    expect(await segmentsOf(p.db, p.id)).toEqual([]);
    expect(await objectKeys(p.id)).toEqual([]);
    expect(await gapRows(p.db, p.id)).toEqual([{ first_seq: 1, last_seq: 10, purged_count: 10 }]);
    expect(await verify(p.key)).toMatchObject({ ok: true, verified: 2, gaps: [{ first_seq: 1, last_seq: 10 }] });
  });

  it("leaves segments without expired events alone", async () => {
    const p = await createProject();
    await ingestMany(p.key, batch(12, "doc.keep", ago(0)));
    await archiveAll(p.id, 5);
    const before = await segmentsOf(p.db, p.id);
    await plan(p.key, [{ pattern: "debug.*", days: 1 }]);
    await purgeExpiredEvents(env, new Date());
    expect(await segmentsOf(p.db, p.id)).toEqual(before);
    expect(await count(p.db, "events WHERE project_id = ?", p.id)).toBe(1);
    expect(await verify(p.key)).toMatchObject({ ok: true, verified: 13 });
  });
});
