/**
 * Old full tiles leave the ledger's storage for the LOGS bucket (issue #38,
 * item 5): the ledger keeps only their SHA-256, so its log costs ~0.2 bytes
 * an event instead of 32. Everything that reads the tree must answer exactly
 * as before the move, a bucket object that is not the tile must be refused
 * (never served, never in a proof, verify fails), and a move cut short
 * anywhere must lose nothing.
 */
import { env, exports } from "cloudflare:workers";
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ProjectLedger } from "../../src/durable/project-ledger.do";
import { tileObjectKey } from "../../src/log/log-directory";
import type { ProjectLog } from "../../src/log/project-log";
import { KEEP_FULL_TILES, offloadTiles } from "../../src/log/tile-offload";
import { base64Encode, concatBytes, hexDecode, hexEncode } from "../../src/tlog/encoding";
import { leafHash, rootFromLeafHashes } from "../../src/tlog/merkle";
import { verifyTlogProof } from "../../src/tlog/tlog-proof";
import { tilePath } from "../../src/tlog/tiles";
import { BASE, call, createProject, ingestMany } from "../helpers";
import { ledger } from "./ledger-log";

type Internals = { log: ProjectLog };

function inLedger<T>(projectId: string, work: (log: ProjectLog, storage: DurableObjectStorage) => Promise<T> | T): Promise<T> {
  return runInDurableObject(ledger(projectId), (instance: ProjectLedger, state) => work((instance as unknown as Internals).log, state.storage));
}

/** The log's tile rows as the ledger's SQLite holds them: "level/index:entries". */
const tileRows = (projectId: string) =>
  inLedger(projectId, (_, storage) =>
    storage.sql
      .exec<{ level: number; idx: number; n: number }>("SELECT level, idx, length(data) / 32 AS n FROM log_tiles ORDER BY level, idx")
      .toArray()
      .map((r) => `${r.level}/${r.idx}:${r.n}`),
  );

/** A project with `n` events, its alarm cleared so nothing moves until the test says so. */
async function projectWith(n: number) {
  const p = await createProject();
  const events = await ingestMany(p.key, Array.from({ length: n }, (_, i) => ({ action: `offload.${i % 7}` })));
  await inLedger(p.id, (_, storage) => storage.deleteAlarm());
  const log = (await call("GET", "/v1/log", { key: p.key })).json.data;
  const leaves = await Promise.all(events.map((e) => leafHash(hexDecode(e.hash))));
  return { p, events, log, leaves };
}

/** Level-0 tile `index` as it must be: the leaf hashes of its 256 events. */
const tileBytes = (leaves: Uint8Array[], index: number) => concatBytes(...leaves.slice(index * 256, index * 256 + 256));

async function fetchPublic(path: string) {
  const res = await exports.default.fetch(new Request(`${BASE}${path}`, { headers: { "CF-Connecting-IP": "10.6.5.4" } }));
  return { status: res.status, bytes: new Uint8Array(await res.arrayBuffer()) };
}

/** Every answer a client or verify gets from the log of `p`, for comparing before and after a move. */
async function answers(p: { id: string; key: string }, events: Array<{ id: string }>, logId: string) {
  const size = events.length;
  const proofs: string[] = [];
  for (const i of [0, 255, 256, 700, 1024, size - 1]) proofs.push((await call("GET", `/v1/events/${events[i].id}/proof`, { key: p.key })).json.data.proof);
  const consistency: unknown[] = [];
  for (const from of [1, 10, 300, 1000, 1536, size]) consistency.push((await call("GET", `/v1/log/consistency?from=${from}&to=${size}`, { key: p.key })).json.data);
  const tiles: string[] = [];
  for (const path of ["tile/0/000", "tile/0/001", "tile/0/002", "tile/0/004", "tile/0/006", "tile/0/007.p/8", "tile/1/000.p/7", "tile/0/000.p/9"]) {
    const res = await fetchPublic(`/logs/${logId}/${path}`);
    tiles.push(`${path} ${res.status} ${base64Encode(res.bytes)}`);
  }
  const { leaves } = await ledger(p.id).leavesAt(Array.from({ length: size }, (_, i) => i));
  const verify = (await call("GET", "/v1/events/verify", { key: p.key })).json.data;
  const info = (await call("GET", "/v1/log", { key: p.key })).json.data;
  const anchor = await ledger(p.id).checkpointAnchor();
  return { proofs, consistency, tiles, leaves: hexEncode(leaves), verify: { ok: verify.ok, verified: verify.verified, failure: verify.failure }, info, anchor };
}

describe("full tiles moved to R2", () => {
  it("leave the ledger's storage from its alarm, and every answer stays the same", async () => {
    // 1,800 events: seven full level-0 tiles and one of 8; level 1 has one partial tile of 7 entries.
    const { p, events, log, leaves } = await projectWith(1800);
    expect(await tileRows(p.id)).toEqual(["0/0:256", "0/1:256", "0/2:256", "0/3:256", "0/4:256", "0/5:256", "0/6:256", "0/7:8", "1/0:7"]);
    // Fetched straight from the ledger: reading through the public route would copy tiles to R2 first.
    const before = await inLedger(p.id, async (l) => ({ t0: await l.tile(0, 0, 256), t2: await l.tile(0, 2, 256) }));
    expect(before.t0).toEqual(tileBytes(leaves, 0));
    expect(before.t2).toEqual(tileBytes(leaves, 2));
    for (const i of [0, 1, 2]) expect(await env.LOGS.head(tileObjectKey(log.log_id, tilePath(0, i)))).toBeNull();

    // The ledger's alarm moves all but the newest KEEP_FULL_TILES full tiles.
    const moved = ["0/3:256", "0/4:256", "0/5:256", "0/6:256", "0/7:8", "1/0:7"];
    await inLedger(p.id, (_, storage) => storage.setAlarm(Date.now()));
    // The runtime fires a due alarm on its own too; either way it runs once.
    await runDurableObjectAlarm(ledger(p.id));
    for (const until = Date.now() + 60_000; JSON.stringify(await tileRows(p.id)) !== JSON.stringify(moved) && Date.now() < until; ) await scheduler.wait(20);
    expect(KEEP_FULL_TILES).toBe(4);
    expect(await tileRows(p.id)).toEqual(moved);
    for (const i of [0, 1, 2]) {
      const object = await env.LOGS.get(tileObjectKey(log.log_id, tilePath(0, i)));
      expect(new Uint8Array(await object!.arrayBuffer())).toEqual(tileBytes(leaves, i));
      // With its SHA-256, so verify checks it from a listing, as it does the route's copies.
      expect(hexEncode(new Uint8Array(object!.checksums.sha256!))).toBe(hexEncode(new Uint8Array(await crypto.subtle.digest("SHA-256", tileBytes(leaves, i)))));
    }
    // What the ledger keeps of a moved tile: its digest.
    const digests = await inLedger(p.id, (_, storage) => storage.sql.exec("SELECT level, idx FROM log_tile_digests WHERE level = 0 AND idx < 3").toArray().length);
    expect(digests).toBe(3);

    // A woken ledger (nothing in memory) answers all of it from R2 and its own rows alike.
    const after = await answers(p, events, log.log_id);
    await evictDurableObject(ledger(p.id));
    expect(await answers(p, events, log.log_id)).toEqual(after);
    // And those answers are right: the leaves, the tiles, a proof of the first event, the root.
    expect(after.leaves).toBe(hexEncode(concatBytes(...leaves)));
    expect(after.tiles[0]).toBe(`tile/0/000 200 ${base64Encode(tileBytes(leaves, 0))}`);
    expect(after.tiles[5]).toBe(`tile/0/007.p/8 200 ${base64Encode(concatBytes(...leaves.slice(1792)))}`);
    expect(after.tiles[7]).toBe(`tile/0/000.p/9 200 ${base64Encode(concatBytes(...leaves.slice(0, 9)))}`);
    expect((await verifyTlogProof(after.proofs[0], { leafData: hexDecode(events[0].hash) }, log.vkey)).ok).toBe(true);
    expect(after.info.root_hash).toBe(base64Encode(await rootFromLeafHashes(leaves)));
    expect(after.verify).toEqual({ ok: true, verified: 1800, failure: null });
    expect(after.anchor).toMatchObject({ tree_size: 1800, tiles_match_root: true });

    // Running again moves nothing more: it is safe to call from every alarm.
    expect(await inLedger(p.id, (l) => offloadTiles(l, env.LOGS))).toEqual({ moved: 0, waiting: 0 });
    expect(await tileRows(p.id)).toEqual(moved);
  });

  it("answers exactly what the unmoved log answered: proofs, consistency, tiles, leaves, verify", async () => {
    const { p, events, log } = await projectWith(1800);
    const before = await answers(p, events, log.log_id);
    // The public reads above copied tiles 0..6 to R2; the move must take those copies as they are.
    expect(await inLedger(p.id, (l) => offloadTiles(l, env.LOGS, { keep: 1 }))).toEqual({ moved: 6, waiting: 0 });
    expect(await tileRows(p.id)).toEqual(["0/6:256", "0/7:8", "1/0:7"]);
    await evictDurableObject(ledger(p.id));
    const after = await answers(p, events, log.log_id);
    expect(after).toEqual(before);
    expect(after.verify).toEqual({ ok: true, verified: 1800, failure: null });
  });

  it("refuses a moved tile the bucket alters or loses: no proof, no tile, verify fails", async () => {
    const { p, events, log, leaves } = await projectWith(1300);
    expect(await inLedger(p.id, (l) => offloadTiles(l, env.LOGS, { keep: 1 }))).toEqual({ moved: 4, waiting: 0 });
    const key = tileObjectKey(log.log_id, "tile/0/001");
    const honest = tileBytes(leaves, 1);
    const proof = async (i: number) => call("GET", `/v1/events/${events[i].id}/proof`, { key: p.key });
    const verify = async () => (await call("GET", "/v1/events/verify", { key: p.key })).json.data;
    expect(await verify()).toMatchObject({ ok: true, verified: 1300 });

    for (const tamper of ["altered", "missing"] as const) {
      if (tamper === "altered") {
        // Another 8 KiB, even stored with its own correct checksum.
        const junk = crypto.getRandomValues(new Uint8Array(256 * 32));
        await env.LOGS.put(key, junk, { sha256: await crypto.subtle.digest("SHA-256", junk) });
      } else await env.LOGS.delete(key);
      // A fresh ledger: nothing it checked before is in its memory.
      await evictDurableObject(ledger(p.id));
      const why = tamper === "altered" ? /log tile 0\/1 \(moved to the LOGS bucket\) is not the tile the ledger recorded.*refused/ : /log tile 0\/1 .* is missing from the bucket: refused/;
      await expect(inLedger(p.id, (l) => l.inclusion(300)), tamper).rejects.toThrow(why);
      await expect(inLedger(p.id, (l) => l.tile(0, 1, 256)), tamper).rejects.toThrow(why);
      await expect(inLedger(p.id, (l) => l.consistency(400, 1300)), tamper).rejects.toThrow(why);
      // Over HTTP: ARCHIVE_DAMAGED (not a retryable 500), never the object's bytes, never a proof.
      const refused = await proof(300);
      expect(refused.status, tamper).toBe(410);
      expect(refused.json.error.code, tamper).toBe("ARCHIVE_DAMAGED");
      const tile = await fetchPublic(`/logs/${log.log_id}/tile/0/001`);
      expect(tile.status, tamper).toBe(410);
      // Verify reports it as it reports any bad copy of a tile.
      expect(await verify(), tamper).toMatchObject({ ok: false, failure: { reason: "leaf_mismatch", event_id: null } });
      expect(await ledger(p.id).checkpointAnchor(), tamper).toMatchObject({ tiles_match_root: false });
      // The leaves of that tile are withheld (zeros, which no event's leaf equals); the others still come.
      const { leaves: got } = await ledger(p.id).leavesAt([255, 256, 511, 512]);
      expect(hexEncode(got)).toBe(hexEncode(concatBytes(leaves[255], new Uint8Array(64), leaves[512])));
      // Proofs that do not need the tile are unaffected.
      expect((await proof(0)).status, tamper).toBe(200);
      expect((await proof(1299)).status, tamper).toBe(200);
    }

    // Put back as it was, the tile is read again: nothing unchecked was kept.
    await env.LOGS.put(key, honest, { sha256: await crypto.subtle.digest("SHA-256", honest) });
    const back = (await proof(300)).json.data;
    expect((await verifyTlogProof(back.proof, { leafData: hexDecode(events[300].hash) }, log.vkey)).ok).toBe(true);
    expect((await fetchPublic(`/logs/${log.log_id}/tile/0/001`)).bytes).toEqual(honest);
    expect(await verify()).toMatchObject({ ok: true, verified: 1300 });
  });

  it("a move cut short between the R2 write and the row delete loses nothing, and the next run finishes it", async () => {
    const { p, events, log, leaves } = await projectWith(1300);
    const proofBefore = (await call("GET", `/v1/events/${events[3].id}/proof`, { key: p.key })).json.data.proof;
    // A planted object where tile 0 will go: the move must replace it, not take it.
    await env.LOGS.put(tileObjectKey(log.log_id, "tile/0/000"), crypto.getRandomValues(new Uint8Array(256 * 32)));

    // Crash at the delete: every object written, no row dropped.
    const crashed = await inLedger(p.id, async (l) => {
      const release = l.store.releaseTiles;
      l.store.releaseTiles = () => {
        throw new Error("crashed before the delete");
      };
      try {
        return await offloadTiles(l, env.LOGS, { keep: 1 }).catch((e: Error) => e.message);
      } finally {
        l.store.releaseTiles = release;
      }
    });
    expect(crashed).toBe("crashed before the delete");
    expect(await tileRows(p.id)).toEqual(["0/0:256", "0/1:256", "0/2:256", "0/3:256", "0/4:256", "0/5:20", "1/0:5"]);
    for (const i of [0, 1, 2, 3]) {
      const object = await env.LOGS.get(tileObjectKey(log.log_id, tilePath(0, i)));
      expect(new Uint8Array(await object!.arrayBuffer()), `tile ${i}`).toEqual(tileBytes(leaves, i));
    }
    expect((await call("GET", `/v1/events/${events[3].id}/proof`, { key: p.key })).json.data.proof).toBe(proofBefore);

    // R2 failing part-way: only the unbroken run of tiles it confirmed loses its rows.
    await env.LOGS.delete([1, 2, 3].map((i) => tileObjectKey(log.log_id, tilePath(0, i))));
    const flaky = new Proxy(env.LOGS, {
      get(target, prop) {
        if (prop === "put") {
          return (...args: Parameters<R2Bucket["put"]>) => (args[0].endsWith("/tile/0/002") ? Promise.reject(new Error("R2 is down")) : target.put(...args));
        }
        const value = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    expect(await inLedger(p.id, (l) => offloadTiles(l, flaky, { keep: 1 }))).toEqual({ moved: 2, waiting: 2 });
    expect(await tileRows(p.id)).toEqual(["0/2:256", "0/3:256", "0/4:256", "0/5:20", "1/0:5"]);

    // A bucket that does not give back what it was given: nothing dropped.
    const lying = new Proxy(env.LOGS, {
      get(target, prop) {
        if (prop === "get") return async () => ({ arrayBuffer: async () => new ArrayBuffer(256 * 32) });
        const value = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    expect(await inLedger(p.id, (l) => offloadTiles(l, lying, { keep: 1 }))).toEqual({ moved: 0, waiting: 2 });
    expect(await tileRows(p.id)).toEqual(["0/2:256", "0/3:256", "0/4:256", "0/5:20", "1/0:5"]);

    // The next ordinary run finishes the job.
    expect(await inLedger(p.id, (l) => offloadTiles(l, env.LOGS, { keep: 1 }))).toEqual({ moved: 2, waiting: 0 });
    expect(await tileRows(p.id)).toEqual(["0/4:256", "0/5:20", "1/0:5"]);
    await evictDurableObject(ledger(p.id));
    expect((await call("GET", `/v1/events/${events[3].id}/proof`, { key: p.key })).json.data.proof).toBe(proofBefore);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 1300 });
  });

  it("moves upper-level tiles too, and proofs over a tree of 65,802 leaves come out the same", async () => {
    const p = await createProject();
    await inLedger(p.id, (_, storage) => storage.deleteAlarm());
    // Synthetic leaves straight into the ledger's tree (no events: this checks the tiles, not the chain).
    const size = 256 * 257 + 10;
    const before = await inLedger(p.id, async (l) => {
      for (let from = 0; from < size; from += 8192) {
        const rows = Array.from({ length: Math.min(8192, size - from) }, (_, k) => ({ seq: from + k + 1, hash: hexEncode(new Uint8Array(32).fill((from + k) % 251)).slice(0, 56) + (from + k).toString(16).padStart(8, "0") }));
        l.apply(await l.extend(rows));
      }
      return snapshot(l, size);
    });
    expect(before.size).toBe(size);
    const rows = await tileRows(p.id);
    expect(rows.filter((r) => r.startsWith("1/"))).toEqual(["1/0:256", "1/1:1"]);

    // keep 0: every full tile with a newer row after it goes, level 1's too, in batches of 128.
    const runs: unknown[] = [];
    for (let i = 0; i < 4; i++) runs.push(await inLedger(p.id, (l) => offloadTiles(l, env.LOGS, { keep: 0 })));
    expect(runs).toEqual([{ moved: 128, waiting: 130 }, { moved: 128, waiting: 2 }, { moved: 2, waiting: 0 }, { moved: 0, waiting: 0 }]);
    expect(await tileRows(p.id)).toEqual(["0/257:10", "1/1:1", "2/0:1"]);
    const logId = await inLedger(p.id, (l) => l.logId());
    expect(await env.LOGS.head(tileObjectKey(logId, "tile/1/000"))).not.toBeNull();

    await evictDurableObject(ledger(p.id));
    expect(await inLedger(p.id, (l) => snapshot(l, size))).toEqual(before);
  });
});

/** A tree's answers for the upper-level test: root from tiles, proofs of spread leaves, consistency, tiles, anchor. */
async function snapshot(log: ProjectLog, size: number) {
  const proofs: string[] = [];
  for (const seq of [1, 257, 40_000, 65_536, 65_537, size]) proofs.push((await log.inclusion(seq))!.proof);
  const consistency: unknown[] = [];
  for (const from of [1, 256, 65_536, 65_600]) consistency.push(await log.consistency(from, size));
  const tiles = [];
  for (const [level, index, width] of [[0, 0, 256], [0, 150, 256], [1, 0, 256], [1, 1, 1], [2, 0, 1], [1, 0, 17]]) tiles.push(base64Encode((await log.tile(level, index, width))!));
  const multiproof = base64Encode((await log.multiproof(size, [0, 300, 65_000]))!);
  return { size: log.size, root: base64Encode(await log.root(size)), past: base64Encode(await log.root(65_000)), proofs, consistency, tiles, multiproof, anchor: await log.anchor() };
}
