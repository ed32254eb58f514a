import { describe, expect, it } from "vitest";
import { newestRowPastHead, rowAfter, rowBefore } from "../../src/chain/chain-check";
import { KEY_SPAN, rowIdsOf, rowsBySeq } from "../../src/model/row-keys";
import { rollupPage } from "../../src/reads/rollup-backfill";
import { call, createProject, ingestMany, listPages } from "../helpers";

/** A project made now, keyed from its first event (storage/projects.ts), with `n` events. */
async function keyedProject(n: number) {
  const p = await createProject();
  await ingestMany(p.key, Array.from({ length: n }, (_, i) => ({ action: `doc.read`, actor: { id: `u${i + 1}` } })));
  return p;
}

/** A project on the seq index, as one made before keys is. */
const olderProject = () => createProject(undefined, { keyed: false });

async function seqs(db: D1Database, projectId: string, read: Omit<Parameters<typeof rowsBySeq>[0], "project">): Promise<number[]> {
  const { results } = await db.prepare(`SELECT e.seq, e.row_id FROM ${rowsBySeq({ project: "?1", ...read })} e`).bind(projectId).all<{ seq: number; row_id: number }>();
  return results.map((r) => r.seq);
}

describe("rows by seq, on the seq index or by keyed row ids", () => {
  it("reads a keyed project's rows in seq order, each once, for any range, order and limit", async () => {
    const p = await keyedProject(7);
    const keyed = await p.db.prepare("SELECT seq FROM events WHERE project_id = ? AND row_id >= ? ORDER BY seq").bind(p.id, KEY_SPAN).all<{ seq: number }>();
    expect(keyed.results.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);

    expect(await seqs(p.db, p.id, { lo: "0", hi: null })).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(await seqs(p.db, p.id, { lo: "0", hi: null, desc: true })).toEqual([7, 6, 5, 4, 3, 2, 1]);
    expect(await seqs(p.db, p.id, { lo: "3", hi: "5" })).toEqual([3, 4, 5]);
    expect(await seqs(p.db, p.id, { lo: "2", hi: null, limit: "3" })).toEqual([2, 3, 4]);
    expect(await seqs(p.db, p.id, { lo: "0", hi: "5", desc: true, limit: "3" })).toEqual([5, 4, 3]);
    expect(await seqs(p.db, p.id, { lo: "5", hi: "99" })).toEqual([5, 6, 7]);
    expect(await seqs(p.db, p.id, { lo: "0", hi: "2" })).toEqual([1, 2]);
    // A bound past every seq stays inside the project's row ids.
    expect(await seqs(p.db, p.id, { lo: "6", hi: String(Number.MAX_SAFE_INTEGER) })).toEqual([6, 7]);
    // Other terms, each path's.
    expect(await seqs(p.db, p.id, { lo: "0", hi: null, where: "e.actor_id IN ('u2', 'u6')" })).toEqual([2, 6]);

    const rowIds = await p.db.prepare(`SELECT e.seq FROM events e WHERE e.row_id IN (${rowIdsOf("?1", "?2")}) ORDER BY e.seq`).bind(p.id, "[2, 5, 7, 9]").all<{ seq: number }>();
    expect(rowIds.results.map((r) => r.seq)).toEqual([2, 5, 7]);
  });

  it("finds a keyed row's neighbours in the chain", async () => {
    const p = await keyedProject(6);
    expect((await rowBefore(p.db, p.id, 5))?.seq).toBe(4);
    expect((await rowBefore(p.db, p.id, 4))?.seq).toBe(3);
    expect(await rowBefore(p.db, p.id, 1)).toBeNull();
    expect((await rowAfter(p.db, p.id, 3, 6))?.seq).toBe(4);
    expect((await rowAfter(p.db, p.id, 1, 6))?.seq).toBe(2);
    expect(await rowAfter(p.db, p.id, 6, 6)).toBeNull();
    expect((await newestRowPastHead(p.db, p.id, 2))?.seq).toBe(6);
    expect((await rollupPage(p.db, p.id, 1, 5, 10)).rows).toHaveLength(4);
    expect((await rollupPage(p.db, p.id, 2, 6, 2)).through).toBe(4);
  });

  it("gives the feed of a project with keyed rows every event once, in chain order", async () => {
    const p = await keyedProject(8);
    const res = await call("GET", "/v1/events/feed?limit=5", { key: p.key });
    expect(res.status, res.text).toBe(200);
    expect(res.json.data.map((e: { seq: number }) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    const next = await call("GET", `/v1/events/feed?limit=5&after=${encodeURIComponent(res.json.nextCursor)}`, { key: p.key });
    expect(next.json.data.map((e: { seq: number }) => e.seq)).toEqual([6, 7, 8]);
    expect(next.json.at_head).toBe(true);
  });

  it("reads every row of a project with no key on the seq index, and none of a keyed project in the same shard", async () => {
    const keyed = await keyedProject(4);
    const p = await olderProject();
    await ingestMany(p.key, [{ action: "a" }, { action: "b" }, { action: "c" }]);
    expect(await seqs(p.db, p.id, { lo: "0", hi: null })).toEqual([1, 2, 3]);
    expect(await seqs(p.db, p.id, { lo: "0", hi: null, desc: true, limit: "1" })).toEqual([3]);
    expect(await seqs(keyed.db, keyed.id, { lo: "0", hi: null, desc: true })).toEqual([4, 3, 2, 1]);
    const older = await p.db.prepare("SELECT count(*) AS n FROM events WHERE project_id = ? AND row_id < ?").bind(p.id, KEY_SPAN).first<{ n: number }>();
    expect(older!.n).toBe(3);
  });

  it("lists, searches, gets and verifies a keyed project's events as it does the same events on the seq index", async () => {
    const keyed = await createProject();
    const older = await olderProject();
    // Commits of repeated actions, organizations and addresses (live sets), lone rows, a backfilled batch (runs,
    // index entries), two target types (type sets), more than one search group.
    const live = (i: number) => ({ action: i % 3 === 0 ? "doc.read" : "doc.write", organization: `org_${i % 2}`, actor: { id: `u${i % 4}`, name: i % 7 === 0 ? "Ada Lovelace" : `User ${i}` }, targets: [{ type: i % 2 ? "doc" : "folder", id: `t${i}` }] });
    for (const p of [keyed, older]) {
      for (let c = 0; c < 6; c++) await ingestMany(p.key, Array.from({ length: c === 2 ? 1 : 7 }, (_, i) => live(c * 7 + i)), { ip: c % 3 === 0 ? "10.0.0.1" : "10.0.0.2" });
      await ingestMany(p.key, Array.from({ length: 5 }, (_, i) => ({ ...live(i), occurred_at: new Date(Date.UTC(2026, 0, 1 + i)).toISOString() })), { ip: "10.0.0.1" });
    }
    const rows = await keyed.db.prepare("SELECT count(*) AS n FROM events WHERE project_id = ? AND row_id >= ?").bind(keyed.id, KEY_SPAN).first<{ n: number }>();
    expect(rows!.n).toBe(6 * 7 - 6 + 5);
    const queries = ["", "action=doc.read", "organization=org_1", "actor_id=u2", "ip_address=10.0.0.1", "ip_address=10.0.0.2", "target_type=doc", "target_type=doc&target_id=t3", "actions=doc.read,doc.write", "actions_exclude=doc.write", "organization=org_0&action=doc.write"];
    for (const q of queries) expect(await listPages(keyed.key, "/v1/events", q, 4), q).toEqual(await listPages(older.key, "/v1/events", q, 4));
    for (const q of ["q=lovelace", "q=user", "q=doc.read&organization=org_1"]) {
      const found = await listPages(keyed.key, "/v1/events/search", q, 3);
      expect(found.length, q).toBeGreaterThan(0);
      expect(found, q).toEqual(await listPages(older.key, "/v1/events/search", q, 3));
    }
    const first = await call("GET", "/v1/events?limit=1", { key: keyed.key });
    const got = await call("GET", `/v1/events/${first.json.data[0].id}`, { key: keyed.key });
    expect(got.json.data.seq).toBe(first.json.data[0].seq);
    const verified = await call("GET", "/v1/events/verify", { key: keyed.key });
    expect(verified.json.data).toMatchObject({ ok: true, verified: 6 * 7 - 6 + 5, failure: null });
  });

  it("verify names the keyed row a database writer deleted or edited", async () => {
    const p = await keyedProject(40);
    await p.db.prepare("UPDATE events SET action = 'doc.wrote' WHERE project_id = ? AND seq = 20").bind(p.id).run();
    const res = await call("GET", "/v1/events/verify", { key: p.key });
    expect(res.json.data).toMatchObject({ ok: false, failure: { reason: "hash_mismatch" } });
    const q = await keyedProject(40);
    await q.db.prepare("DELETE FROM events WHERE project_id = ? AND seq = 33").bind(q.id).run();
    expect((await call("GET", "/v1/events/verify", { key: q.key })).json.data.ok).toBe(false);
  });
});
