import { createExecutionContext, createScheduledController, evictDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import { ARM_LEAD_MS, dropPeriod, makePeriod, periodOf } from "../../src/model/periods";
import { JOBS_CRON } from "../../src/scheduled";
import worker from "../../src/index";
import { tendPeriods } from "../../src/storage/period-upkeep";
import { SHARD_CACHE_SECONDS } from "../../src/storage/shards";
import { BASE, call, createProject, createScopedKey, ingestMany, listPages, moveIntoPeriod, pastArm, until, warmKey } from "../helpers";
import { archiveAll } from "./archive-helpers";

const rowsIn = async (db: D1Database, table: string, projectId: string) =>
  (await db.prepare(`SELECT count(*) AS n FROM ${table} WHERE project_id = ?`).bind(projectId).first<{ n: number }>())!.n;

/** The seqs of a JSON export of every event (GET /v1/exports), in the order written. */
async function exported(key: string): Promise<number[]> {
  const res = await exports.default.fetch(new Request(`${BASE}/v1/exports?format=json`, { headers: { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "10.9.9.10" } }));
  expect(res.status).toBe(200);
  return (JSON.parse(await res.text()) as Array<{ seq: number }>).map((e) => e.seq);
}

/** How many segments period `n`'s search index is in (FTS5's own merges leave a written index in several). */
const searchSegments = async (db: D1Database, n: number) => (await db.prepare(`SELECT count(DISTINCT segid) AS n FROM events_search_p${n}_idx`).first<{ n: number }>())!.n;

const objectsOf = async (db: D1Database, n: number) => (await db.prepare("SELECT name FROM sqlite_master WHERE name LIKE ?").bind(`%_p${n}`).all()).results.length;

describe("a shard's periods over their life", () => {
  it("waits past every reader's cached list of periods before writing to one", () => {
    expect(ARM_LEAD_MS).toBeGreaterThanOrEqual(2 * SHARD_CACHE_SECONDS * 1000);
  });

  it("writes a project's commits to the period of their instant once the shard made it, and keeps a project without a window in the main tables", async () => {
    const p = await createProject();
    const allHot = await createProject();
    await env.DB.prepare("UPDATE projects SET hot_days = NULL WHERE id = ?").bind(allHot.id).run();
    const n = periodOf(Date.now());
    // Made as the daily cron makes it, ahead: writers wait ARM_LEAD_MS after that.
    await makePeriod(p.db, n, new Date(Date.now() - 2 * ARM_LEAD_MS));
    try {
      const sent = [...(await ingestMany(p.key, [{ action: "doc.read" }]))];
      await ingestMany(allHot.key, [{ action: "doc.read" }]);
      // The ledger reads its shard's periods at its start and in the background, never in a commit's way: commits go there.
      await until(async () => {
        sent.push(...(await ingestMany(p.key, [{ action: "doc.write" }])));
        return (await rowsIn(p.db, `events_p${n}`, p.id)) > 0;
      });
      sent.push(...(await ingestMany(p.key, Array.from({ length: 20 }, (_, i) => ({ action: "doc.share", actor: { id: `u${i}` } })))));
      const inPeriod = await rowsIn(p.db, `events_p${n}`, p.id);
      expect(inPeriod + (await rowsIn(p.db, "events", p.id))).toBe(sent.length);
      expect(inPeriod).toBeGreaterThanOrEqual(21);
      expect(await listPages(p.key, "/v1/events", "", 7)).toEqual(sent.map((e) => e.seq).reverse());
      expect(await listPages(p.key, "/v1/events", "action=doc.share&actor_id=u3", 7)).toEqual([sent[sent.length - 17].seq]);

      for (let i = 0; i < 3; i++) await ingestMany(allHot.key, [{ action: "doc.write" }]);
      expect(await rowsIn(p.db, `events_p${n}`, allHot.id)).toBe(0);
      expect(await rowsIn(p.db, "events", allHot.id)).toBe(4);
    } finally {
      await dropPeriod(p.db, n);
    }
  });

  it("takes the main tables of a project that commits to periods for settled, and reads a commit that lands there at once", async () => {
    const p = await createProject();
    const n = periodOf(Date.now());
    await makePeriod(p.db, n, new Date(Date.now() - 2 * ARM_LEAD_MS));
    try {
      // The ledger reads its shard's periods at its start, before its first commit: that one goes to the period, and
      // the main tables stay unmarked.
      const first = await ingestMany(p.key, [{ action: "doc.read", actor: { id: "u1" } }]);
      expect(await rowsIn(p.db, `events_p${n}`, p.id)).toBe(1);
      expect(await rowsIn(p.db, "events", p.id)).toBe(0);
      expect(await rowsIn(p.db, "main_commits", p.id)).toBe(0);
      // This isolate now keeps the project's spans (30 s): the main tables settled, with none of its rows.
      expect(await listPages(p.key, "/v1/events", "", 5)).toEqual([first[0].seq]);

      // Kept hot longer than periods wait, the project's commits go to the main tables once its ledger reads that.
      await env.DB.prepare("UPDATE projects SET hot_days = 400 WHERE id = ?").bind(p.id).run();
      await evictDurableObject(env.LEDGER.get(env.LEDGER.idFromName(p.id)));
      const later = await ingestMany(p.key, [{ action: "doc.write", actor: { id: "u1" } }, { action: "doc.share", actor: { id: "u2" } }]);
      await ingestMany(p.key, [{ action: "doc.write", actor: { id: "u1" } }]).then((e) => later.push(...e));
      expect(await rowsIn(p.db, "events", p.id)).toBe(3);
      // Marked once, by the first commit there.
      expect(await rowsIn(p.db, "main_commits", p.id)).toBe(1);

      // Every read shows them at once, though the spans this isolate keeps took the main tables for empty.
      const seqs = [...later.map((e) => e.seq).reverse(), first[0].seq];
      expect(await listPages(p.key, "/v1/events", "", 2)).toEqual(seqs);
      expect(await listPages(p.key, "/v1/events", "actor_id=u1", 5)).toEqual([later[2].seq, later[0].seq, first[0].seq]);
      expect(await listPages(p.key, "/v1/events/search", "q=doc.share", 5)).toEqual([later[1].seq]);
      const got = await call("GET", `/v1/events/${later[1].id}`, { key: p.key });
      expect(got.status, got.text).toBe(200);
      expect(got.json.data.seq).toBe(later[1].seq);
      expect(await exported(p.key)).toEqual(seqs);
    } finally {
      await dropPeriod(p.db, n);
    }
  });

  it("reads rows the archive brings back into the main tables of a project that commits to periods at once", async () => {
    const p = await createProject();
    const archived = await ingestMany(p.key, Array.from({ length: 12 }, (_, i) => ({ action: "doc.read", actor: { id: `u${i % 3}` } })));
    await archiveAll(p.id, 6);
    expect(await rowsIn(p.db, "events", p.id)).toBe(0);
    // Kept hot a window periods wait for (archiveAll leaves none), with no main tables' mark, as a project made before
    // the mark; its ledger, started again, writes to the period of its instant.
    await env.DB.prepare("UPDATE projects SET hot_days = 30 WHERE id = ?").bind(p.id).run();
    await p.db.prepare("DELETE FROM main_commits WHERE project_id = ?").bind(p.id).run();
    const n = periodOf(Date.now());
    await makePeriod(p.db, n, new Date(Date.now() - 2 * ARM_LEAD_MS));
    try {
      await evictDurableObject(env.LEDGER.get(env.LEDGER.idFromName(p.id)));
      const hot = await ingestMany(p.key, [{ action: "doc.write", actor: { id: "u1" } }]);
      expect(await rowsIn(p.db, `events_p${n}`, p.id)).toBe(1);
      // The operator's key, looked up now: a key's first lookup in an isolate reads the project's shard afresh.
      const { key: admin } = await createScopedKey(p.id, ["admin"]);
      await warmKey(admin);
      // This isolate now keeps the project's spans: the main tables settled, holding none of its rows.
      const before = [hot[0].seq, ...archived.map((e) => e.seq).reverse()];
      expect(await listPages(p.key, "/v1/events", "", 5)).toEqual(before);

      // Tiering off, as a restore asks: the ledger goes on writing to the period until it reads that (a minute).
      await env.DB.prepare("UPDATE projects SET hot_days = NULL WHERE id = ?").bind(p.id).run();
      const restored = await call("POST", "/v1/project/restore-archive", { key: admin });
      expect(restored.json.data, restored.text).toMatchObject({ status: "done", remaining: 0, restored: 12 });
      expect(await rowsIn(p.db, "events", p.id)).toBe(12);
      // The restore's own record went to the period; the restored rows are read at once from the main tables.
      const record = (await call("GET", "/v1/events?action=witness.archive.restored", { key: p.key })).json.data;
      expect(record).toHaveLength(1);
      expect(await rowsIn(p.db, `events_p${n}`, p.id)).toBe(2);
      expect(await listPages(p.key, "/v1/events", "", 5)).toEqual([record[0].seq, ...before]);
      expect(await listPages(p.key, "/v1/events", "actor_id=u1", 5)).toEqual([hot[0].seq, ...archived.filter((_, i) => i % 3 === 1).map((e) => e.seq).reverse()]);
      const got = await call("GET", `/v1/events/${archived[4].id}`, { key: p.key });
      expect(got.json.data.seq, got.text).toBe(archived[4].seq);
      // Marked by the restore's own batch.
      expect(await rowsIn(p.db, "main_commits", p.id)).toBe(1);
    } finally {
      await dropPeriod(p.db, n);
    }
  });

  it("skips a growing period that holds nothing of a page, and reads a commit that lands there, or lower in it, at once", async () => {
    const p = await createProject();
    const n = periodOf(Date.now());
    await makePeriod(p.db, n, new Date(Date.now() - 2 * ARM_LEAD_MS));
    const lows = async () => (await p.db.prepare("SELECT lo FROM period_lows WHERE project_id = ? AND period = ?").bind(p.id, n).all<{ lo: string }>()).results.map((r) => r.lo);
    try {
      // This isolate now keeps the project's spans (30 s): the current period holds none of its rows.
      expect(await listPages(p.key, "/v1/events", "", 5)).toEqual([]);
      // The first commit there marks the period with its lowest occurred_at, in its own batch: every read shows it
      // at once, though the spans kept took the period for empty.
      const first = await ingestMany(p.key, [{ action: "doc.read", actor: { id: "u1" } }]);
      expect(await rowsIn(p.db, `events_p${n}`, p.id)).toBe(1);
      expect(await lows()).toEqual([first[0].occurred_at]);
      expect(await listPages(p.key, "/v1/events", "", 5)).toEqual([first[0].seq]);
      const got = await call("GET", `/v1/events/${first[0].id}`, { key: p.key });
      expect(got.status, got.text).toBe(200);

      // The spans kept now say the period holds rows from the first's instant up: a page that starts below it
      // (date_to days before) skips it. A backdated commit lands below, lowering the mark: it is read at once.
      const before = new Date(Date.now() - 2 * 86_400_000).toISOString();
      expect(await listPages(p.key, "/v1/events", `date_to=${before}`, 5)).toEqual([]);
      const back = await ingestMany(p.key, [
        { action: "doc.write", actor: { id: "u2" }, occurred_at: new Date(Date.now() - 3 * 86_400_000).toISOString() },
        { action: "doc.share", actor: { id: "u2" }, occurred_at: new Date(Date.now() - 4 * 86_400_000).toISOString() },
      ]);
      expect(await lows()).toEqual([back[1].occurred_at]);
      expect(await listPages(p.key, "/v1/events", `date_to=${before}`, 1)).toEqual([back[0].seq, back[1].seq]);
      expect(await listPages(p.key, "/v1/events", "actor_id=u2", 1)).toEqual([back[0].seq, back[1].seq]);
      expect(await listPages(p.key, "/v1/events", "", 1)).toEqual([first[0].seq, back[0].seq, back[1].seq]);
      expect(await listPages(p.key, "/v1/events/search", "q=doc.share", 5)).toEqual([back[1].seq]);
      expect(await exported(p.key)).toEqual([first[0].seq, back[0].seq, back[1].seq]);
      // A commit no lower leaves the mark as it is: nothing written for it.
      await ingestMany(p.key, [{ action: "doc.read", actor: { id: "u1" } }]);
      expect(await lows()).toEqual([back[1].occurred_at]);
    } finally {
      await dropPeriod(p.db, n);
    }
    // Dropped with the period.
    expect(await lows()).toEqual([]);
  });

  it("seals a period past the window whatever its projects' windows, keeps its rows till it drops them whole, and every read goes on", async () => {
    const p = await createProject();
    const n = pastArm();
    await makePeriod(p.db, n);
    const sent = await ingestMany(p.key, Array.from({ length: 30 }, (_, i) => ({ action: i % 2 ? "doc.read" : "doc.write", actor: { id: `u${i % 5}` } })));
    expect(await moveIntoPeriod(p.db, p.id, n, 0, 10)).toBe(30);
    const seqs = sent.map((e) => e.seq).reverse();

    // Past its window: sealing. Nothing sealed yet, so it stays.
    const first = await tendPeriods(env, p.db, new Date());
    expect(first.sealing).toContain(n);
    expect(first.toSeal).toContain(p.id);
    expect(first.dropped).not.toContain(n);

    // The project's window (30 days) has not passed for these events; the period's sealing seals them all the same.
    const ledger = ledgerOf(env, p.id);
    for (let i = 0; i < 20; i++) if ((await ledger.archiveSegment(new Date().toISOString(), { segmentRows: 8 })).done) break;
    const segments = await p.db.prepare("SELECT first_seq, last_seq FROM archive_segments WHERE project_id = ? ORDER BY first_seq").bind(p.id).all<{ first_seq: number; last_seq: number }>();
    expect(segments.results.map((s) => [s.first_seq, s.last_seq])).toEqual([[1, 8], [9, 16], [17, 24], [25, 30]]);
    // Sealed, not deleted: the period keeps them until it is dropped, and reads take each event once.
    expect(await rowsIn(p.db, `events_p${n}`, p.id)).toBe(30);
    expect(await listPages(p.key, "/v1/events", "", 7)).toEqual(seqs);
    expect(await listPages(p.key, "/v1/events", "actor_id=u2", 2)).toEqual(sent.filter((_, i) => i % 5 === 2).map((e) => e.seq).reverse());
    // An export writes them once: from the archive, not also from the period.
    expect((await exported(p.key)).sort((a, b) => a - b)).toEqual([...seqs].sort((a, b) => a - b));
    const verifiedSealed = await call("GET", "/v1/events/verify", { key: p.key });
    expect(verifiedSealed.json.data).toMatchObject({ ok: true, verified: 30, failure: null });

    // Everything in it sealed: dropped whole.
    const second = await tendPeriods(env, p.db, new Date());
    expect(second.dropped).toEqual([n]);
    expect(second.toSeal).not.toContain(p.id);
    expect(await objectsOf(p.db, n)).toBe(0);
    expect(await listPages(p.key, "/v1/events", "", 7)).toEqual(seqs);
    expect(await listPages(p.key, "/v1/events/search", "q=doc.read", 4)).toEqual(sent.filter((_, i) => i % 2).map((e) => e.seq).reverse());
    const got = await call("GET", `/v1/events/${sent[20].id}`, { key: p.key });
    expect(got.json.data.seq, got.text).toBe(sent[20].seq);
    const verified = await call("GET", "/v1/events/verify", { key: p.key });
    expect(verified.json.data).toMatchObject({ ok: true, verified: 30, failure: null });
    expect((await exported(p.key)).sort((a, b) => a - b)).toEqual([...seqs].sort((a, b) => a - b));
  });

  it("takes the main tables' mark from a project with no row left there, and lists a commit that lands there after at once", async () => {
    const moved = await createProject();
    const stays = await createProject();
    const n = pastArm();
    await makePeriod(moved.db, n);
    try {
      const marked = async (id: string) => (await moved.db.prepare("SELECT count(*) AS n FROM main_commits WHERE project_id = ?").bind(id).first<{ n: number }>())!.n;
      const sent = await ingestMany(moved.key, Array.from({ length: 6 }, (_, i) => ({ action: "doc.read", actor: { id: `u${i}` } })));
      await ingestMany(stays.key, [{ action: "doc.read" }]);
      expect([await marked(moved.id), await marked(stays.id)]).toEqual([1, 1]);
      // The one project's rows leave the main tables (as its older rows do when archived); the other's stay.
      expect(await moveIntoPeriod(moved.db, moved.id, n, 0)).toBe(6);
      const run = await tendPeriods(env, moved.db, new Date());
      expect(run.unmarked).toBeGreaterThanOrEqual(1);
      expect([await marked(moved.id), await marked(stays.id)]).toEqual([0, 1]);
      // Its lists read the main tables as settled and empty now, and keep that reading a while; a commit there
      // writes the mark again with its rows, and the next list finds it in its first batch.
      expect(await listPages(moved.key, "/v1/events", "", 4)).toEqual(sent.map((e) => e.seq).reverse());
      const [late] = await ingestMany(moved.key, [{ action: "doc.write", actor: { id: "u0" } }]);
      expect(await marked(moved.id)).toBe(1);
      expect(await listPages(moved.key, "/v1/events", "", 4)).toEqual([late, ...sent].map((e) => e.seq).sort((a, b) => b - a));
      expect(await listPages(moved.key, "/v1/events", "actor_id=u0", 4)).toEqual([late.seq, sent[0].seq]);
      // Rows there again: the next run keeps the mark.
      await tendPeriods(env, moved.db, new Date());
      expect(await marked(moved.id)).toBe(1);
    } finally {
      await dropPeriod(moved.db, n);
    }
  });

  it("merges a settled period's search index into one segment, once, and search finds the same events", async () => {
    const p = await createProject();
    const n = pastArm();
    await makePeriod(p.db, n);
    try {
      const sent = await ingestMany(p.key, Array.from({ length: 48 }, (_, i) => ({ action: "doc.read", actor: { id: `u${i}`, name: i % 4 ? "Plain" : `Kestrel ${i}` } })));
      // A commit of three events at a time, as a week of small commits leaves it: a segment each, or few merged.
      expect(await moveIntoPeriod(p.db, p.id, n, 0, 3)).toBe(48);
      expect(await searchSegments(p.db, n)).toBeGreaterThan(1);
      const kestrels = sent.filter((_, i) => i % 4 === 0).map((e) => e.seq).reverse();
      expect(await listPages(p.key, "/v1/events/search", "q=kestrel", 5)).toEqual(kestrels);

      const first = await tendPeriods(env, p.db, new Date());
      expect(first.compacted).toContain(n);
      expect(await searchSegments(p.db, n)).toBe(1);
      expect(await listPages(p.key, "/v1/events/search", "q=kestrel", 5)).toEqual(kestrels);
      expect(await listPages(p.key, "/v1/events/search", "q=kestrel%2012", 5)).toEqual([sent[12].seq]);
      // Merged already: the next run sees nothing to do there.
      expect((await tendPeriods(env, p.db, new Date())).compacted).not.toContain(n);
    } finally {
      await dropPeriod(p.db, n);
    }
  });

  it("merges the current period's search index each day while commits land in it, and search finds every event", async () => {
    const p = await createProject();
    const n = periodOf(Date.now());
    await makePeriod(p.db, n, new Date(Date.now() - 2 * ARM_LEAD_MS));
    try {
      // Three commits of 20, each closing a group of 16 (its search entry): a segment each.
      const send = (from: number) => ingestMany(p.key, Array.from({ length: 20 }, (_, i) => ({ action: "doc.read", actor: { id: `u${from + i}`, name: (from + i) % 4 ? "Plain" : `Kestrel ${from + i}` } })));
      const sent = [...(await send(0)), ...(await send(20)), ...(await send(40))];
      expect(await rowsIn(p.db, `events_p${n}`, p.id)).toBe(60);
      expect(await searchSegments(p.db, n)).toBeGreaterThan(1);
      const kestrels = () => sent.filter((_, i) => i % 4 === 0).map((e) => e.seq).reverse();
      expect(await listPages(p.key, "/v1/events/search", "q=kestrel", 4)).toEqual(kestrels());

      const first = await tendPeriods(env, p.db, new Date());
      expect(first.compacted).toContain(n);
      expect(await searchSegments(p.db, n)).toBe(1);
      expect(await listPages(p.key, "/v1/events/search", "q=kestrel", 4)).toEqual(kestrels());
      // The next day's commits add segments of their own beside the merged one, found at once; that day's run merges them in.
      sent.push(...(await send(60)), ...(await send(80)));
      expect(await searchSegments(p.db, n)).toBeGreaterThan(1);
      expect(await listPages(p.key, "/v1/events/search", "q=kestrel", 4)).toEqual(kestrels());
      expect(await listPages(p.key, "/v1/events/search", "q=kestrel%2084", 4)).toEqual([sent[84].seq]);
      expect((await tendPeriods(env, p.db, new Date())).compacted).toContain(n);
      expect(await searchSegments(p.db, n)).toBe(1);
      expect(await listPages(p.key, "/v1/events/search", "q=kestrel", 4)).toEqual(kestrels());
      expect(await listPages(p.key, "/v1/events/search", "q=kestrel%2084", 4)).toEqual([sent[84].seq]);
    } finally {
      await dropPeriod(p.db, n);
    }
  });

  it("loses and repeats nothing when a period's sealing stops after its objects are written, or before its drop", async () => {
    const p = await createProject();
    const n = pastArm();
    await makePeriod(p.db, n);
    const sent = await ingestMany(p.key, Array.from({ length: 12 }, (_, i) => ({ action: "doc.read", actor: { id: `u${i}` } })));
    await moveIntoPeriod(p.db, p.id, n, 0);
    expect((await tendPeriods(env, p.db, new Date())).sealing).toContain(n);
    const ledger = ledgerOf(env, p.id);
    // Stopped after the segment's objects, before its D1 transaction: nothing sealed, nothing lost.
    const failed = await ledger.archiveSegment(new Date().toISOString(), { segmentRows: 8, failAfterPut: true }).then(
      () => null,
      (e: Error) => e,
    );
    expect(failed?.message).toContain("injected failure");
    expect(await p.db.prepare("SELECT count(*) AS n FROM archive_segments WHERE project_id = ?").bind(p.id).first("n")).toBe(0);
    // A cron meanwhile keeps the period: its rows are not sealed yet.
    expect((await tendPeriods(env, p.db, new Date())).dropped).not.toContain(n);
    for (let i = 0; i < 10; i++) if ((await ledger.archiveSegment(new Date().toISOString(), { segmentRows: 8 })).done) break;
    const segments = await p.db.prepare("SELECT first_seq, last_seq FROM archive_segments WHERE project_id = ? ORDER BY first_seq").bind(p.id).all<{ first_seq: number; last_seq: number }>();
    expect(segments.results.map((x) => [x.first_seq, x.last_seq])).toEqual([[1, 8], [9, 12]]);
    // Another step finds nothing left to seal in the period, though its rows are still there.
    expect((await ledger.archiveSegment(new Date().toISOString(), { segmentRows: 8 })).archived).toBe(0);
    expect(await rowsIn(p.db, `events_p${n}`, p.id)).toBe(12);
    expect((await tendPeriods(env, p.db, new Date())).dropped).toEqual([n]);
    expect(await listPages(p.key, "/v1/events", "", 5)).toEqual(sent.map((e) => e.seq).reverse());
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 12 });
  });

  it("makes the current period and the next only when periods are on, and leaves a period with unsealed rows", async () => {
    const p = await createProject();
    const now = new Date();
    const current = periodOf(now.getTime());
    const off = await tendPeriods({ ...env, PERIODS: "off" }, p.db, now);
    expect(off.made).toEqual([]);
    const made = await tendPeriods({ ...env, PERIODS: "on" }, p.db, now);
    try {
      expect(made.made).toEqual([current, current + 1]);
      expect((await tendPeriods({ ...env, PERIODS: "on" }, p.db, now)).made).toEqual([]);
      // Neither is past, so neither seals.
      const listed = await p.db.prepare("SELECT n, sealing_at FROM periods WHERE n >= ?").bind(current).all<{ n: number; sealing_at: string | null }>();
      expect(listed.results).toEqual([{ n: current, sealing_at: null }, { n: current + 1, sealing_at: null }]);
    } finally {
      await dropPeriod(p.db, current);
      await dropPeriod(p.db, current + 1);
    }
  });

  it("has the minute cron make each shard's current period when periods are on and it is missing, and two makers at once fail nothing", async () => {
    const shards = [env.DB, env.EVENTS_1];
    // Day-long periods, so the numbers are this test's own (weekly ones are some 2,900 now, daily some 20,000).
    const daily = { ...env, PERIOD_SECONDS: "86400" };
    const minuteCron = async (e: Env) => {
      const ctx = createExecutionContext();
      await worker.scheduled(createScheduledController({ scheduledTime: new Date(), cron: JOBS_CRON }), e, ctx);
      await waitOnExecutionContext(ctx);
    };
    const listed = async (db: D1Database, from: number, to: number) =>
      (await db.prepare("SELECT n FROM periods WHERE n BETWEEN ? AND ?").bind(from, to).all<{ n: number }>()).results.map((r) => r.n);
    const first = periodOf(Date.now(), 86_400_000);
    await minuteCron({ ...daily, PERIODS: "off" });
    for (const db of shards) expect(await listed(db, first, first + 1)).toEqual([]);
    await minuteCron({ ...daily, PERIODS: "on" });
    const last = periodOf(Date.now(), 86_400_000);
    try {
      // The current one only (the daily run makes the next a period ahead), in every shard, and its tables are there.
      for (const db of shards) {
        const made = await listed(db, first, last + 1);
        expect(made).toHaveLength(1);
        expect(made[0]).toBeGreaterThanOrEqual(first);
        expect(made[0]).toBeLessThanOrEqual(last);
        expect(await objectsOf(db, made[0])).toBeGreaterThan(10);
      }
      // Again: nothing more.
      await minuteCron({ ...daily, PERIODS: "on" });
      for (const db of shards) expect(await listed(db, first, last + 1)).toHaveLength(1);
      // Two makers of one period at the same moment (the minute's and the day's run at 03:17): one makes it, the
      // other is told it was there, neither fails, and it is whole.
      const n = last + 7;
      const both = await Promise.all([makePeriod(env.EVENTS_1, n), makePeriod(env.EVENTS_1, n)]);
      expect(both.filter(Boolean)).toHaveLength(1);
      expect(await listed(env.EVENTS_1, n, n)).toEqual([n]);
      expect(await objectsOf(env.EVENTS_1, n)).toBe(await objectsOf(env.EVENTS_1, (await listed(env.EVENTS_1, first, last))[0]));
    } finally {
      for (const db of shards) for (const n of await listed(db, first, last + 7)) await dropPeriod(db, n);
    }
  });
});
