import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import { companionKey } from "../../src/storage/archive-segments";
import { archiveTier } from "../../src/storage/archive-walk";
import { sha256Hex } from "../../src/lib/crypto";
import { call, createProject, ingestMany } from "../helpers";
import { eraseApplied } from "../chain/erasure-helpers";
import { archiveAll, forgetCompanionRecords, gunzipText, gzipText, segmentsOf } from "./archive-helpers";

/**
 * Issue 26, item 5: a damaged archive is reported, never a 500 that says to
 * retry, and export companions are trusted only on the ledger's record.
 */
const events = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ action: "doc.viewed", actor: { id: `u_${i % 3}`, name: `Ada ${i}`, email: `ada${i}@example.com` }, metadata: { i } }));

const verify = async (key: string) => (await call("GET", "/v1/events/verify", { key })).json.data;

async function archived(count: number, rows: number, sent = events(count)) {
  const p = await createProject();
  const stored = await ingestMany(p.key, sent);
  await archiveAll(p.id, rows);
  return { ...p, stored, segments: await segmentsOf(p.db, p.id) };
}

describe("a damaged archive segment", () => {
  it("is a verify failure naming the segment's first event, for a missing object and for altered bytes", async () => {
    const p = await archived(30, 10);
    const [, middle] = p.segments;
    await env.ARCHIVE.delete(middle.object_key);
    expect(await verify(p.key)).toMatchObject({
      ok: false,
      verified: 10,
      failure: { event_id: p.stored[10].id, reason: "archive_damaged", at: middle.first_occurred_at },
    });

    const q = await archived(30, 10);
    const object = await env.ARCHIVE.get(q.segments[2].object_key);
    const text = (await gunzipText(await object!.arrayBuffer())).replace("Ada 25", "Eve 25");
    await env.ARCHIVE.put(q.segments[2].object_key, await gzipText(text));
    const result = await verify(q.key);
    expect(result).toMatchObject({ ok: false, verified: 20, failure: { event_id: q.stored[20].id, reason: "archive_damaged" } });
  });

  it("makes get, receipts, list and search answer 410 ARCHIVE_DAMAGED, never a retryable 500", async () => {
    const p = await archived(30, 10);
    await env.ARCHIVE.delete(p.segments[1].object_key);
    const inside = p.stored[14].id;
    for (const [path, key] of [
      [`/v1/events/${inside}`, p.key],
      [`/v1/events/${inside}/receipt`, p.key],
      [`/v1/receipts/${inside}`, null],
      // An intact event whose successor lies in the damaged segment cannot be checked either.
      [`/v1/receipts/${p.stored[9].id}`, null],
    ] as const) {
      const res = await call("GET", path, { key });
      expect(res.status, path).toBe(410);
      expect(res.json.error.code, path).toBe("ARCHIVE_DAMAGED");
      expect(res.json.error.message, path).not.toMatch(/safe to retry/);
    }
    const page = await call("GET", `/receipts/${inside}`);
    expect(page.status).toBe(410);
    expect(page.text).toContain("archived copy of this event is missing or damaged");
    // A list or search page that must read the damaged segment says so the same way.
    for (const path of ["/v1/events?limit=50", "/v1/events/search?q=ada&limit=50"]) {
      const res = await call("GET", path, { key: p.key });
      expect(res.status, path).toBe(410);
      expect(res.json.error.code, path).toBe("ARCHIVE_DAMAGED");
      expect(res.json.error.message, path).not.toMatch(/safe to retry/);
    }
    // Events in intact segments are still served.
    expect((await call("GET", `/v1/events/${p.stored[25].id}`, { key: p.key })).status).toBe(200);
    expect((await call("GET", `/v1/receipts/${p.stored[25].id}`)).json.data.valid).toBe(true);
  });
});

describe("export companions", () => {
  /** The attack: a writer of D1 and R2 rewrites a companion and the hash its index row keeps. */
  async function forgeCompanion(db: D1Database, projectId: string, objectKey: string) {
    const key = companionKey(objectKey, "csv");
    const forged = (await gunzipText(await (await env.ARCHIVE.get(key))!.arrayBuffer())).replace(/ada(\d+)@example\.com/g, "mallory$1@evil.test");
    const bytes = await gzipText(forged);
    await env.ARCHIVE.put(key, bytes, { sha256: await sha256Hex(new Uint8Array(bytes)) });
    await db.prepare("UPDATE archive_segments SET csv_sha256 = ? WHERE project_id = ? AND object_key = ?").bind(await sha256Hex(new Uint8Array(bytes)), projectId, objectKey).run();
  }

  it("are served only on the ledger's record, and verify reports a forged one", async () => {
    const p = await archived(30, 10);
    const honest = (await call("GET", "/v1/exports?format=csv", { key: p.key })).text;
    expect(honest).toContain("ada17@example.com");
    await forgeCompanion(p.db, p.id, p.segments[1].object_key);
    const exported = (await call("GET", "/v1/exports?format=csv", { key: p.key })).text;
    expect(exported).not.toContain("evil.test");
    expect(exported).toBe(honest);
    expect(await verify(p.key)).toMatchObject({ ok: false, verified: 10, failure: { event_id: p.stored[10].id, reason: "archive_damaged" } });
  });

  it("sealed before the ledger kept records are exported from their segment until the archiver renders them again", async () => {
    const p = await archived(30, 10);
    const honest = (await call("GET", "/v1/exports?format=csv", { key: p.key })).text;
    await forgetCompanionRecords(p.id, p.segments);
    // A forged companion of such a segment is never served, and verify has nothing to check it against yet.
    await forgeCompanion(p.db, p.id, p.segments[0].object_key);
    expect((await call("GET", "/v1/exports?format=csv", { key: p.key })).text).toBe(honest);
    expect(await verify(p.key)).toMatchObject({ ok: true, verified: 30 });
    // The archiver renders every segment's companions from its rows and the ledger records them: the forgery is gone.
    await archiveAll(p.id, 10);
    const csv = await env.ARCHIVE.get(companionKey(p.segments[0].object_key, "csv"));
    expect(await gunzipText(await csv!.arrayBuffer())).not.toContain("evil.test");
    expect((await call("GET", "/v1/exports?format=csv", { key: p.key })).text).toBe(honest);
    await forgeCompanion(p.db, p.id, p.segments[2].object_key);
    expect(await verify(p.key)).toMatchObject({ ok: false, failure: { event_id: p.stored[20].id, reason: "archive_damaged" } });
  });

  it("of a segment rewritten by an erasure are recorded with the rewrite, and kept by the next archiver step", async () => {
    const p = await archived(30, 10);
    expect((await eraseApplied(p.key, "/v1/actors/u_1")).status).toBe(202);
    const rewritten = await segmentsOf(p.db, p.id);
    // The erasure's job rendered the new companions from the rows it scrubbed, and switched them in under the ledger's lock.
    const recorded = await ledgerOf(env, p.id).companionHashes(rewritten.map((s) => s.sha256));
    expect(Object.keys(recorded).sort()).toEqual(rewritten.map((s) => s.sha256).sort());
    await archiveAll(p.id, 10);
    const after = await ledgerOf(env, p.id).companionHashes(rewritten.map((s) => s.sha256));
    expect(Object.keys(after).sort()).toEqual(rewritten.map((s) => s.sha256).sort());
    expect(await verify(p.key)).toMatchObject({ ok: true, anonymized: 10 });
  });
});

describe("a segment rewritten while a walk runs", () => {
  it("is read as it is now, not reported as damaged", async () => {
    const p = await archived(30, 10);
    const tier = archiveTier(env, p.db, p.id);
    const seen: number[] = [];
    let erased = false;
    for await (const page of tier.between(0, 31, 10)) {
      seen.push(...page.map((r) => r.seq));
      if (!erased) {
        // The erasure rewrites every segment under new keys and deletes the old objects the walk listed.
        expect((await eraseApplied(p.key, "/v1/actors/u_1")).status).toBe(202);
        expect(await env.ARCHIVE.get(p.segments[2].object_key)).toBeNull();
        erased = true;
      }
    }
    expect(seen).toEqual(p.stored.map((e: { seq: number }) => e.seq));
    expect(await verify(p.key)).toMatchObject({ ok: true, anonymized: 10 });
  });
});

/**
 * A segment's index row in D1 stands in for its events' index entries: lists and exports between dates skip a
 * segment whose time bounds miss the window, and a receipt finds an archived id by the segment's id tag and receive
 * times. A D1 writer who alters them hides intact events from those reads; verify, which reads every segment whole,
 * names the first event its row no longer bounds.
 */
describe("an archived segment's index row", () => {
  const listed = async (key: string, from: string, to: string) =>
    (await call("GET", `/v1/events?date_from=${encodeURIComponent(from)}&date_to=${encodeURIComponent(to)}&limit=100`, { key })).json.data.map((e: { seq: number }) => e.seq);

  it("moved in time hides its events from lists between dates, and verify names the first of them", async () => {
    // A minute apart, so each segment covers its own ten minutes.
    const p = await archived(30, 10, events(30).map((e, i) => ({ ...e, occurred_at: new Date(Date.UTC(2026, 10, 1) + i * 60_000).toISOString() })));
    const middle = p.segments[1];
    const from = p.stored[10].occurred_at;
    const to = p.stored[19].occurred_at;
    expect(await listed(p.key, from, to)).toEqual([20, 19, 18, 17, 16, 15, 14, 13, 12, 11]);
    const moved = "2000-01-01T00:00:00.000Z";
    await p.db.prepare("UPDATE archive_segments SET first_occurred_at = ?3, last_occurred_at = ?3 WHERE project_id = ?1 AND first_seq = ?2").bind(p.id, middle.first_seq, moved).run();
    expect(await listed(p.key, from, to)).toEqual([]);
    expect(await verify(p.key)).toMatchObject({ ok: false, verified: 10, failure: { event_id: p.stored[10].id, reason: "index_damaged", at: from } });
    await p.db.prepare("UPDATE archive_segments SET first_occurred_at = ?3, last_occurred_at = ?4 WHERE project_id = ?1 AND first_seq = ?2").bind(p.id, middle.first_seq, middle.first_occurred_at, middle.last_occurred_at).run();
    expect(await listed(p.key, from, to)).toHaveLength(10);
    expect(await verify(p.key)).toMatchObject({ ok: true, verified: 30, failure: null });
  });

  it("with another id tag or receive times leaves its events' public receipts unknown, and verify names the first", async () => {
    const p = await archived(30, 10);
    const last = p.segments[2];
    const receipt = async () => (await call("GET", `/v1/receipts/${p.stored[24].id}`)).status;
    expect(await receipt()).toBe(200);
    const set = (columns: string, ...values: unknown[]) =>
      p.db.prepare(`UPDATE archive_segments SET ${columns} WHERE project_id = ?1 AND first_seq = ?2`).bind(p.id, last.first_seq, ...values).run();
    const tampers = [
      ["id_tag = ?3", [(last.id_tag! + 1) % 2 ** 32], ["id_tag = ?3", [last.id_tag]]],
      ["first_received_at = ?3, last_received_at = ?3", ["2000-01-01T00:00:00.000Z"], ["first_received_at = ?3, last_received_at = ?4", [last.first_received_at, last.last_received_at]]],
    ] as const;
    for (const [columns, values, [back, original]] of tampers) {
      await set(columns, ...values);
      expect(await receipt(), columns).toBe(404);
      expect(await verify(p.key), columns).toMatchObject({ ok: false, verified: 20, failure: { event_id: p.stored[20].id, reason: "index_damaged" } });
      await set(back, ...original);
      expect(await receipt(), columns).toBe(200);
    }
    expect(await verify(p.key)).toMatchObject({ ok: true, verified: 30, failure: null });
  });
});
