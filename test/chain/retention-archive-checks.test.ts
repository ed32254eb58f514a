import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import { purgeExpiredEvents } from "../../src/chain/retention";
import { sha256Hex } from "../../src/lib/crypto";
import { segmentObjects } from "../../src/storage/archive-companions";
import { RETENTION_FAULT_KEY } from "../../src/chain/retention-archive";
import { call, createProject, ingestMany } from "../helpers";
import { archiveAll, gunzipText, gzipText, segmentsOf } from "../storage/archive-helpers";
import { ago, archivedSeqs, batch, count, gapRows, ledgerKv, objectKeys, plan, purgeSteps, verify, halfExpiredSegment } from "../storage/retention-helpers";

/** Retention in the cold tier makes every check the hot purge makes, and survives a crash mid-step. */
describe("retention of archived segments: what it keeps", () => {
  it("keeps the rows of a held actor in their segment and purges the others around them", async () => {
    const p = await createProject();
    const stored = await ingestMany(p.key, batch(9, "doc.read", ago(10)));
    await archiveAll(p.id, 9);
    expect((await call("POST", "/v1/legal-holds", { key: p.key, body: { actor_id: "u_1", reason: "litigation" } })).status).toBe(201);
    await plan(p.key, [{ pattern: "*", days: 5 }]);
    await purgeExpiredEvents(env, new Date());

    expect((await segmentsOf(p.db, p.id)).map((s) => [s.first_seq, s.count])).toEqual([[1, 3]]);
    expect(await archivedSeqs(p.db, p.id)).toEqual([2, 5, 8]);
    for (const i of [1, 4, 7]) expect((await call("GET", `/v1/events/${stored[i].id}`, { key: p.key })).status).toBe(200);
    expect(await gapRows(p.db, p.id)).toEqual([
      { first_seq: 1, last_seq: 1, purged_count: 1 },
      { first_seq: 3, last_seq: 4, purged_count: 2 },
      { first_seq: 6, last_seq: 7, purged_count: 2 },
      { first_seq: 9, last_seq: 9, purged_count: 1 },
    ]);
    expect(await verify(p.key)).toMatchObject({ ok: true, failure: null });
  });

  it("leaves an archived row someone altered, and verify reports it", async () => {
    const p = await createProject();
    const stored = await ingestMany(p.key, batch(10, "doc.read", ago(10)));
    await archiveAll(p.id, 10);
    // A writer of R2 and D1 edits an archived row and the hash its index row keeps.
    const [segment] = await segmentsOf(p.db, p.id);
    const lines = (await gunzipText(await (await env.ARCHIVE.get(segment.object_key))!.arrayBuffer())).split("\n").map((l) => JSON.parse(l));
    lines[4].metadata = JSON.stringify({ i: 99 });
    const bytes = await gzipText(lines.map((l) => JSON.stringify(l)).join("\n"));
    await env.ARCHIVE.put(segment.object_key, bytes);
    await p.db.prepare("UPDATE archive_segments SET sha256 = ? WHERE project_id = ? AND first_seq = 1").bind(await sha256Hex(new Uint8Array(bytes)), p.id).run();

    await plan(p.key, [{ pattern: "*", days: 5 }]);
    expect(await purgeSteps(p.id)).toEqual({ purged: 9, refused: 1 });
    expect(await archivedSeqs(p.db, p.id)).toEqual([5]);
    expect(await gapRows(p.db, p.id)).toEqual([
      { first_seq: 1, last_seq: 4, purged_count: 4 },
      { first_seq: 6, last_seq: 10, purged_count: 5 },
    ]);
    expect(await verify(p.key)).toMatchObject({ ok: false, failure: { event_id: stored[4].id, reason: "hash_mismatch" } });
  });
});

describe("retention of archived segments: a crash", () => {
  it("between the rewritten objects' write and the transaction loses nothing, and the next run finishes the rewrite", async () => {
    const { p, stored, original } = await halfExpiredSegment();
    await ledgerKv(p.id, (kv) => kv.put(RETENTION_FAULT_KEY, true));
    await purgeExpiredEvents(env, new Date());

    // The segment is as it was; the new objects are written but named by no index row.
    expect(await segmentsOf(p.db, p.id)).toEqual([original]);
    expect(await gapRows(p.db, p.id)).toEqual([]);
    const rewritten = original.object_key.replace(/\.jsonl\.gz$/, ".r5.jsonl.gz");
    expect(await objectKeys(p.id)).toEqual([...segmentObjects(original.object_key), ...segmentObjects(rewritten)].sort());
    expect(await verify(p.key)).toMatchObject({ ok: true, verified: 11 });

    await purgeExpiredEvents(env, new Date());
    const [after] = await segmentsOf(p.db, p.id);
    expect(after).toMatchObject({ first_seq: 1, count: 5, object_key: rewritten });
    expect(await objectKeys(p.id)).toEqual(segmentObjects(rewritten).sort());
    expect(await count(p.db, "retention_gaps WHERE project_id = ?", p.id)).toBe(5);
    expect((await call("GET", `/v1/events/${stored[1].id}`, { key: p.key })).status).toBe(200);
    expect(await verify(p.key)).toMatchObject({ ok: true, verified: 6 });
  });

  it("after the transaction leaves only the old objects, which the archiver's sweep deletes", async () => {
    const p = await createProject();
    await ingestMany(p.key, batch(10, "doc.read", ago(10)));
    await archiveAll(p.id, 5);
    const [first] = await segmentsOf(p.db, p.id);
    const bytes = await Promise.all(segmentObjects(first.object_key).map(async (key) => [key, await (await env.ARCHIVE.get(key))!.arrayBuffer()] as const));
    await plan(p.key, [{ pattern: "*", days: 5 }]);
    await purgeExpiredEvents(env, new Date());
    expect(await segmentsOf(p.db, p.id)).toEqual([]);
    // As if the step had crashed before deleting the retired segment's objects.
    for (const [key, body] of bytes) await env.ARCHIVE.put(key, body);
    expect(await objectKeys(p.id)).toEqual(segmentObjects(first.object_key).sort());
    for (let i = 0; i < 10 && !(await ledgerOf(env, p.id).archiveSegment(new Date().toISOString())).done; i++);
    expect(await objectKeys(p.id)).toEqual([]);
    expect(await verify(p.key)).toMatchObject({ ok: true, gaps: [{ first_seq: 1, last_seq: 10 }] });
  });
});
