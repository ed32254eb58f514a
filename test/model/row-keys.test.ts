import { describe, expect, it } from "vitest";
import { newestRowPastHead, rowAfter, rowBefore } from "../../src/chain/chain-check";
import { KEY_SPAN, rowIdsOf, rowsBySeq } from "../../src/model/row-keys";
import { rollupPage } from "../../src/reads/rollup-backfill";
import { forgetShard } from "../../src/storage/shards";
import { call, createProject, ingestMany, listPages } from "../helpers";

/**
 * Gives a project a key and moves its rows to their keyed row ids (n x 2^40 + seq, n the next free number of
 * the shard), as a writer of keyed rows will write them (src/model/row-keys.ts), and drops this isolate's cached place
 * (storage/shards.ts). Its search entries and rows of event_targets keep the old row ids: these tests read by seq,
 * and list by the filters that find rows by seq.
 */
async function key(db: D1Database, projectId: string) {
  await db.batch([
    db.prepare("INSERT INTO project_keys (project_id, n) SELECT ?1, coalesce(max(n), 0) + 1 FROM project_keys").bind(projectId),
    db.prepare(`UPDATE events SET row_id = (SELECT n FROM project_keys WHERE project_id = ?1) * ${KEY_SPAN} + seq WHERE project_id = ?1`).bind(projectId),
  ]);
  // Reads cache a project's number with its shard (storage/shards.ts): a project is keyed only when it is placed.
  forgetShard(projectId);
}

/** A keyed project of `n` events. */
async function keyedProject(n: number) {
  const p = await createProject();
  await ingestMany(p.key, Array.from({ length: n }, (_, i) => ({ action: `doc.read`, actor: { id: `u${i + 1}` } })));
  await key(p.db, p.id);
  return p;
}

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
    const p = await createProject();
    await ingestMany(p.key, [{ action: "a" }, { action: "b" }, { action: "c" }]);
    expect(await seqs(p.db, p.id, { lo: "0", hi: null })).toEqual([1, 2, 3]);
    expect(await seqs(p.db, p.id, { lo: "0", hi: null, desc: true, limit: "1" })).toEqual([3]);
    expect(await seqs(keyed.db, keyed.id, { lo: "0", hi: null, desc: true })).toEqual([4, 3, 2, 1]);
  });

  it("lists a keyed project's events by every filter that reads rows by seq, page by page, as it listed them before", async () => {
    const p = await createProject();
    // Commits of repeated actions, organizations and addresses (live sets), lone rows, a backfilled batch (runs,
    // index entries), two target types (type sets).
    const live = (i: number) => ({ action: i % 3 === 0 ? "doc.read" : "doc.write", organization: `org_${i % 2}`, actor: { id: `u${i % 4}` }, targets: [{ type: i % 2 ? "doc" : "folder", id: `t${i}` }] });
    for (let c = 0; c < 6; c++) await ingestMany(p.key, Array.from({ length: c === 2 ? 1 : 7 }, (_, i) => live(c * 7 + i)), { ip: c % 3 === 0 ? "10.0.0.1" : "10.0.0.2" });
    await ingestMany(p.key, Array.from({ length: 5 }, (_, i) => ({ ...live(i), occurred_at: new Date(Date.UTC(2026, 0, 1 + i)).toISOString() })), { ip: "10.0.0.1" });
    const queries = ["", "action=doc.read", "organization=org_1", "actor_id=u2", "ip_address=10.0.0.1", "ip_address=10.0.0.2", "target_type=doc", "actions=doc.read,doc.write", "actions_exclude=doc.write", "organization=org_0&action=doc.write"];
    const before = await Promise.all(queries.map((q) => listPages(p.key, "/v1/events", q, 4)));
    expect(before[0]).toHaveLength(6 * 7 - 6 + 5);
    await key(p.db, p.id);
    for (const [i, q] of queries.entries()) expect(await listPages(p.key, "/v1/events", q, 4), q).toEqual(before[i]);
    // And by id, from its commit's span or its own row.
    const first = await call("GET", "/v1/events?limit=1", { key: p.key });
    const got = await call("GET", `/v1/events/${first.json.data[0].id}`, { key: p.key });
    expect(got.status, got.text).toBe(200);
    expect(got.json.data.seq).toBe(first.json.data[0].seq);
  });
});
