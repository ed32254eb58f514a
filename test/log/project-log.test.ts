import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ProjectLedger } from "../../src/durable/project-ledger.do";
import { verifyCheckpoint } from "../../src/tlog/checkpoint";
import { base64Decode, base64Encode, hexDecode, hexEncode } from "../../src/tlog/encoding";
import { eventLeafHash, leafDiffers, pageLeaves } from "../../src/tlog/leaf-check";
import { backfillStep } from "../../src/log/log-backfill";
import { TreeFrontier, leafHash, rootFromLeafHashes } from "../../src/tlog/merkle";
import type { ProjectLog } from "../../src/log/project-log";
import { verifyTlogProof } from "../../src/tlog/tlog-proof";
import { verifyConsistency } from "../../src/tlog/proofs";
import { call, createProject, ingest, ingestMany } from "../helpers";
import { chainRows, forgetLog, leafCheck, ledger, rewriteEvents } from "./ledger-log";

const rootOf = async (hashes: string[]) => base64Encode(await rootFromLeafHashes(await Promise.all(hashes.map((h) => leafHash(hexDecode(h))))));
const logInfo = async (key: string) => (await call("GET", "/v1/log", { key })).json.data;

type Internals = { log: ProjectLog; current: { seq: number; hash: string | null }; logDeps(): Parameters<typeof backfillStep>[1] };

/** One backfill page of `pageSize`, run inside the ledger as its alarm would. */
function step(projectId: string, pageSize: number) {
  return runInDurableObject(ledger(projectId), (instance: ProjectLedger) => {
    const i = instance as unknown as Internals;
    return backfillStep(i.log, i.logDeps(), pageSize);
  });
}

describe("the ledger's tree", () => {
  it("grows in the group commit: head and tree always agree", async () => {
    const p = await createProject();
    const events = await ingestMany(p.key, Array.from({ length: 300 }, (_, i) => ({ action: `a.${i}` })));
    const state = await runInDurableObject(ledger(p.id), (instance: ProjectLedger) => {
      const i = instance as unknown as Internals;
      return { size: i.log.size, head: i.current.seq };
    });
    expect(state).toEqual({ size: 300, head: 300 });
    expect((await logInfo(p.key)).root_hash).toBe(await rootOf(events.map((e) => e.hash)));
  });

  it("catches an event rewritten in D1 and re-signed with the real key through its leaf", async () => {
    const p = await createProject();
    await ingestMany(p.key, Array.from({ length: 5 }, (_, i) => ({ action: `b.${i}` })));
    expect(await leafCheck(p.id, await chainRows(p.db, p.id))).toEqual([]);
    // Even a rewrite that re-hashes and re-signs every later event: each row checks out alone.
    await rewriteEvents(p.db, p.id, 2, 5);
    expect(await leafCheck(p.id, await chainRows(p.db, p.id))).toEqual([2, 3, 4, 5]);
    // Leaves are the ledger's; D1 cannot change them.
    const { leaves } = await ledger(p.id).leavesAt([1]);
    expect(hexEncode(leaves)).not.toBe(await eventLeafHash((await chainRows(p.db, p.id, 2))[0].hash));
    expect(await ledger(p.id).checkpointAnchor()).toMatchObject({ tree_size: 5, tiles_match_root: true });
  });
});

describe("a ledger that saves its frontier once a leaf tile, not once a commit", () => {
  it("starts again anywhere in a tile and goes on with the same tree, consistent with every checkpoint before", async () => {
    const p = await createProject();
    const hashes: string[] = [];
    let before: { tree_size: number; root_hash: string } | null = null;
    // Ends inside a leaf tile, at its last leaf, at a full tile, one past it, and past the second level's first entry.
    for (const count of [3, 252, 1, 1, 254, 1]) {
      hashes.push(...(await ingestMany(p.key, Array.from({ length: count }, (_, i) => ({ action: `f.${i}` })))).map((e) => e.hash));
      await evictDurableObject(ledger(p.id));
      const info = await logInfo(p.key);
      expect(info.tree_size).toBe(hashes.length);
      expect(info.root_hash).toBe(await rootOf(hashes));
      if (before) {
        const proof = await ledger(p.id).logConsistency(before.tree_size, info.tree_size);
        const ok = await verifyConsistency(before.tree_size, info.tree_size, proof!.proof.map(base64Decode), base64Decode(before.root_hash), base64Decode(info.root_hash));
        expect(ok, `${before.tree_size} -> ${info.tree_size}`).toBe(true);
      }
      before = info;
    }
    expect(await ledger(p.id).checkpointAnchor()).toMatchObject({ tree_size: 512, tiles_match_root: true });
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 512 });
  });

  it("writes it only with a commit that completes a leaf tile", async () => {
    const p = await createProject();
    const saved = () => runInDurableObject(ledger(p.id), (_, state) => (state.storage.kv.get<{ size: number }>("log:frontier") ?? null)?.size ?? null);
    await ingestMany(p.key, Array.from({ length: 200 }, (_, i) => ({ action: `s.${i}` })));
    expect(await saved()).toBeNull();
    // 200 -> 300 completes leaf tile 0: the frontier at 300 is saved; 300 -> 400 completes nothing.
    await ingestMany(p.key, Array.from({ length: 100 }, (_, i) => ({ action: `t.${i}` })));
    expect(await saved()).toBe(300);
    await ingestMany(p.key, Array.from({ length: 100 }, (_, i) => ({ action: `u.${i}` })));
    expect(await saved()).toBe(300);
  });

  it("still catches an upper tile entry that drifted from the leaves, after a start as before it", async () => {
    const p = await createProject();
    await ingestMany(p.key, Array.from({ length: 300 }, (_, i) => ({ action: `v.${i}` })));
    expect(await ledger(p.id).checkpointAnchor()).toMatchObject({ tree_size: 300, tiles_match_root: true });
    // The root of leaves 0-255, as the level-1 tile holds it, altered in the ledger's storage.
    await runInDurableObject(ledger(p.id), (_, state) => {
      state.storage.sql.exec("UPDATE log_tiles SET data = zeroblob(32) WHERE level = 1 AND idx = 0");
    });
    await evictDurableObject(ledger(p.id));
    // The frontier the ledger starts from was made from the leaves, not from that entry: the two roots disagree.
    expect(await ledger(p.id).checkpointAnchor()).toMatchObject({ tree_size: 300, tiles_match_root: false });
  });

  it("goes on from the frontier older code saved on every commit", async () => {
    const p = await createProject();
    const first = await ingestMany(p.key, Array.from({ length: 5 }, (_, i) => ({ action: `g.${i}` })));
    // What older code left: the frontier at the head, written by its last commit.
    const frontier = TreeFrontier.empty();
    await frontier.appendMany(await Promise.all(first.map((e) => leafHash(hexDecode(e.hash)))));
    await runInDurableObject(ledger(p.id), (_, state) => state.storage.kv.put("log:frontier", frontier.toJSON()));
    await evictDurableObject(ledger(p.id));
    const more = await ingestMany(p.key, [{ action: "g.5" }]);
    expect((await logInfo(p.key)).root_hash).toBe(await rootOf([...first, ...more].map((e) => e.hash)));
    expect(await ledger(p.id).checkpointAnchor()).toMatchObject({ tree_size: 6, tiles_match_root: true });
  });
});

describe("a ledger whose head is kept on its log's newest leaf row", () => {
  const stored = (projectId: string) =>
    runInDurableObject(ledger(projectId), (_, state) => ({
      head: state.storage.kv.get<{ seq: number; hash: string }>("head") ?? null,
      last: state.storage.sql.exec<{ last: string | null }>("SELECT last FROM log_tiles WHERE level = 0 ORDER BY idx DESC LIMIT 1").one().last,
    }));

  it("writes no head row of its own while its log takes every commit, and starts again from that row", async () => {
    const p = await createProject();
    const sent = [];
    for (let i = 0; i < 3; i++) sent.push((await ingest(p.key, { action: `h.${i}` })).json.data);
    expect(await stored(p.id)).toEqual({ head: null, last: sent[2].hash });
    await evictDurableObject(ledger(p.id));
    const next = (await ingest(p.key, { action: "h.3" })).json.data;
    expect(next.seq).toBe(4);
    const [row] = await chainRows(p.db, p.id, 4);
    expect(row.prev_hash).toBe(sent[2].hash);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 4 });
    expect(await ledger(p.id).checkpointAnchor()).toMatchObject({ tree_size: 4, tiles_match_root: true });
  });

  it("goes on from the head older code kept apart, when its leaf rows carry none", async () => {
    const p = await createProject();
    const first = await ingestMany(p.key, Array.from({ length: 3 }, (_, i) => ({ action: `o.${i}` })));
    // What older code left: the head in KV, written by every commit, and no `last` column on the tiles.
    await runInDurableObject(ledger(p.id), (instance: ProjectLedger, state) => {
      state.storage.kv.put("head", (instance as unknown as Internals).current);
      state.storage.sql.exec("ALTER TABLE log_tiles DROP COLUMN last");
    });
    await evictDurableObject(ledger(p.id));
    const next = (await ingest(p.key, { action: "o.3" })).json.data;
    expect(next.seq).toBe(4);
    expect((await chainRows(p.db, p.id, 4))[0].prev_hash).toBe(first[2].hash);
    // From then on the leaf row keeps it.
    expect((await stored(p.id)).last).toBe(next.hash);
    await evictDurableObject(ledger(p.id));
    expect((await ingest(p.key, { action: "o.4" })).json.data.seq).toBe(5);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 5 });
  });
});

describe("backfill of a project that predates its log", () => {
  it("builds the tree in bounded steps, publishing nothing until it reaches the head", async () => {
    const p = await createProject();
    const events = await ingestMany(p.key, Array.from({ length: 700 }, (_, i) => ({ action: `c.${i}` })));
    const expected = await rootOf(events.map((e) => e.hash));
    await forgetLog(p.id);

    const building = await logInfo(p.key);
    expect(building).toMatchObject({ status: "building", tree_size: 0, built_size: 0, head_seq: 700 });
    expect((await verifyCheckpoint(building.checkpoint, building.vkey)).ok).toBe(true);
    const pending = await call("GET", `/v1/events/${events[0].id}/proof`, { key: p.key });
    expect(pending.status).toBe(409);
    expect(pending.json.error).toMatchObject({ code: "LOG_NOT_READY", details: { status: "building" } });

    // Appends go on meanwhile; their leaves wait for the backfill.
    const late = (await ingest(p.key, { action: "late" })).json.data;
    expect(await step(p.id, 300)).toBe("building");
    expect(await logInfo(p.key)).toMatchObject({ status: "building", tree_size: 0, built_size: 300, head_seq: 701 });
    expect(await step(p.id, 300)).toBe("building");
    expect(await step(p.id, 300)).toBe("ready");

    const ready = await logInfo(p.key);
    expect(ready).toMatchObject({ status: "ready", tree_size: 701, built_size: 701 });
    expect(ready.root_hash).toBe(await rootOf([...events, late].map((e) => e.hash)));
    expect(ready.root_hash).not.toBe(expected);
    // From here on, commits extend the tree directly.
    await ingest(p.key, { action: "after" });
    expect((await logInfo(p.key)).tree_size).toBe(702);
    const proof = (await call("GET", `/v1/events/${events[0].id}/proof`, { key: p.key })).json.data;
    expect((await verifyTlogProof(proof.proof, { leafData: hexDecode(events[0].hash) }, ready.vkey)).ok).toBe(true);
  });

  it("runs from the ledger's alarm, set when the ledger wakes after a deploy", async () => {
    const p = await createProject();
    const events = await ingestMany(p.key, Array.from({ length: 50 }, (_, i) => ({ action: `d.${i}` })));
    await forgetLog(p.id, { evict: true });
    // Waking the ledger sets its alarm; the runtime fires it on its own (or we do, if it has not yet).
    expect((await logInfo(p.key)).head_seq).toBe(50);
    await runDurableObjectAlarm(ledger(p.id));
    for (const until = Date.now() + 60_000; (await logInfo(p.key)).status !== "ready" && Date.now() < until; ) await scheduler.wait(20);
    expect(await logInfo(p.key)).toMatchObject({ status: "ready", tree_size: 50, root_hash: await rootOf(events.map((e) => e.hash)) });
  });

  it("reports honestly when a purged event makes the tree impossible to build", async () => {
    const p = await createProject();
    await ingestMany(p.key, Array.from({ length: 10 }, (_, i) => ({ action: `e.${i}` })));
    await forgetLog(p.id);
    await p.db.prepare("DELETE FROM events WHERE project_id = ? AND seq IN (1, 2)").bind(p.id).run();
    expect(await step(p.id, 100)).toBe("blocked");
    expect(await logInfo(p.key)).toMatchObject({ status: "blocked", tree_size: 0, blocked: { seq: 1, reason: "missing" } });
  });

  it("refuses rows rewritten in D1 before the tree existed, even re-signed with the real key", async () => {
    for (const [through, reason] of [[4, "chain_broken"], [10, "head_mismatch"]] as const) {
      const p = await createProject();
      await ingestMany(p.key, Array.from({ length: 10 }, (_, i) => ({ action: `f.${i}` })));
      await forgetLog(p.id);
      await rewriteEvents(p.db, p.id, 3, through);
      expect(await step(p.id, 4)).toBe("building");
      while ((await step(p.id, 4)) === "building");
      const info = await logInfo(p.key);
      expect(info, reason).toMatchObject({ status: "blocked", tree_size: 0, blocked: { reason } });
    }
    // A hash that does not recompute from its row is caught on that row.
    const p = await createProject();
    await ingestMany(p.key, Array.from({ length: 3 }, (_, i) => ({ action: `g.${i}` })));
    await forgetLog(p.id);
    await p.db.prepare("UPDATE events SET action = 'edited' WHERE project_id = ? AND seq = 2").bind(p.id).run();
    expect(await step(p.id, 10)).toBe("blocked");
    expect((await logInfo(p.key)).blocked).toEqual({ seq: 2, reason: "hash_mismatch" });
  });
});

describe("pageLeaves, for verify", () => {
  it("gives each row of a page its RFC 6962 leaf, and none past the tree", async () => {
    const p = await createProject();
    await ingestMany(p.key, Array.from({ length: 6 }, (_, i) => ({ action: `h.${i}` })));
    const honest = await chainRows(p.db, p.id, 2);
    await rewriteEvents(p.db, p.id, 4);
    const rows = await chainRows(p.db, p.id, 2);
    // Scattered rows, as a windowed page has them, and one the tree does not hold yet.
    const page = [rows[0], rows[2], rows[3], rows[4], { seq: 7, hash: "0".repeat(64) }];
    const leafOf = await pageLeaves((indexes) => ledger(p.id).leavesAt(indexes), page);
    for (const [i, row] of page.slice(0, 4).entries()) {
      const original = honest.find((h) => h.seq === row.seq)!;
      expect(hexEncode(leafOf(i)!)).toBe(hexEncode(await leafHash(hexDecode(original.hash))));
    }
    expect(leafOf(4)).toBeNull();
    const flagged = [];
    for (const [i, row] of page.entries()) if (await leafDiffers(row.hash, leafOf(i))) flagged.push(row.seq);
    expect(flagged).toEqual([4]);
    expect(await leafDiffers("not hex", leafOf(0))).toBe(true);
  });
});
