/**
 * Public tiles trust nothing in storage (issue #26, item 4): the LOGS bucket
 * and the control database's log_id column are written by people other than
 * the ledger, so a planted or swapped object must never be served, verify
 * must see it, and a monitor must not be told of a fork that is not there.
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { base64Encode, hexDecode } from "../../src/tlog/encoding";
import { leafHash } from "../../src/tlog/merkle";
import { type FetchLike, monitorLog } from "../../src/tlog/monitor";
import { decodeTile } from "../../src/tlog/tiles";
import { tileObjectKey } from "../../src/log/log-directory";
import { BASE, call, createProject, ingestMany } from "../helpers";

async function projectWith(n: number) {
  const p = await createProject();
  const events = await ingestMany(p.key, Array.from({ length: n }, (_, i) => ({ action: `tile.${i % 5}` })));
  const log = (await call("GET", "/v1/log", { key: p.key })).json.data;
  return { p, events, log };
}

async function fetchPublic(path: string) {
  const res = await exports.default.fetch(new Request(`${BASE}${path}`, { headers: { "CF-Connecting-IP": "10.9.8.7" } }));
  return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) };
}

/** The leaf hashes of events [from, to), base64: what level-0 tile entries must be. */
const leavesOf = (events: Array<{ hash: string }>, from: number, to: number) =>
  Promise.all(events.slice(from, to).map(async (e) => base64Encode(await leafHash(hexDecode(e.hash)))));

/** 256 hashes of junk: a well-formed full tile that is not the log's. */
const junkTile = () => crypto.getRandomValues(new Uint8Array(256 * 32));

async function verify(key: string) {
  return (await call("GET", "/v1/events/verify", { key })).json.data;
}

/** The route keeps its R2 copy in the background: wait until the object holds `want`. */
async function untilStored(key: string, want: Uint8Array) {
  for (let i = 0; i < 100; i++) {
    const obj = await env.LOGS.get(key);
    if (obj && base64Encode(new Uint8Array(await obj.arrayBuffer())) === base64Encode(want)) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

describe("public tiles and the LOGS bucket", () => {
  it("a planted object for a tile the tree does not have yet is 404, never served immutable", async () => {
    const { log } = await projectWith(300);
    for (const path of ["tile/0/001", "tile/0/002", "tile/1/000"]) {
      await env.LOGS.put(tileObjectKey(log.log_id, path), junkTile());
      const res = await fetchPublic(`/logs/${log.log_id}/${path}`);
      expect(res.status, path).toBe(404);
      expect(res.headers.get("Cache-Control"), path).toBe("no-store");
    }
  });

  it("a full tile object that is not the ledger's is not served, and is replaced by the ledger's", async () => {
    const { events, log } = await projectWith(600);
    const key = tileObjectKey(log.log_id, "tile/0/001");
    // Planted before anyone read it: the first read must not take it.
    await env.LOGS.put(key, junkTile());
    const first = await fetchPublic(`/logs/${log.log_id}/tile/0/001`);
    expect(first.status).toBe(200);
    expect(decodeTile(first.bytes, 256).map(base64Encode)).toEqual(await leavesOf(events, 256, 512));
    expect(await untilStored(key, first.bytes)).toBe(true);
    // Overwritten after the route took it from R2: later reads check the copy again.
    await env.LOGS.put(key, junkTile());
    const again = await fetchPublic(`/logs/${log.log_id}/tile/0/001`);
    expect(again.status).toBe(200);
    expect(base64Encode(again.bytes)).toBe(base64Encode(first.bytes));
    expect(again.headers.get("Cache-Control")).toBe("public, max-age=31536000, immutable");
    expect(await untilStored(key, first.bytes)).toBe(true);
  });

  it("verify fails while a published tile in R2 differs from the ledger's, and passes once it is replaced", async () => {
    const { p, log } = await projectWith(300);
    const key = tileObjectKey(log.log_id, "tile/0/000");
    const honest = await fetchPublic(`/logs/${log.log_id}/tile/0/000`);
    expect(await untilStored(key, honest.bytes)).toBe(true);
    expect(await verify(p.key)).toMatchObject({ ok: true, verified: 300 });

    await env.LOGS.put(key, junkTile());
    expect(await verify(p.key)).toMatchObject({ ok: false, failure: { reason: "leaf_mismatch", event_id: null } });
    // A public read serves the ledger's bytes and puts them back: verify is ok again.
    expect(base64Encode((await fetchPublic(`/logs/${log.log_id}/tile/0/000`)).bytes)).toBe(base64Encode(honest.bytes));
    expect(await untilStored(key, honest.bytes)).toBe(true);
    expect(await verify(p.key)).toMatchObject({ ok: true, verified: 300 });

    // An object for a tile the tree does not have yet is evidence too, though it is never served.
    await env.LOGS.put(tileObjectKey(log.log_id, "tile/0/001"), junkTile());
    expect(await verify(p.key)).toMatchObject({ ok: false, failure: { reason: "leaf_mismatch", event_id: null } });
    await env.LOGS.delete(tileObjectKey(log.log_id, "tile/0/001"));
    expect(await verify(p.key)).toMatchObject({ ok: true });
  });

  it("a brief swap of two projects' log_id in D1 stores neither's tiles under the other's address", async () => {
    // Only ingest has woken the ledgers: neither has been asked for its log yet.
    const make = async () => {
      const p = await createProject();
      const events = await ingestMany(p.key, Array.from({ length: 300 }, (_, i) => ({ action: `swap.${i}` })));
      const row = await env.DB.prepare("SELECT log_id FROM projects WHERE id = ?").bind(p.id).first<{ log_id: string }>();
      return { p, events, log: { log_id: row!.log_id } };
    };
    const a = await make();
    const b = await make();
    const swap = async (x: string, y: string) => {
      // log_id is unique: move one out of the way first.
      await env.DB.prepare("UPDATE projects SET log_id = ? WHERE id = ?").bind("f".repeat(32), a.p.id).run();
      await env.DB.prepare("UPDATE projects SET log_id = ? WHERE id = ?").bind(x, b.p.id).run();
      await env.DB.prepare("UPDATE projects SET log_id = ? WHERE id = ?").bind(y, a.p.id).run();
    };
    await swap(a.log.log_id, b.log.log_id);
    for (const path of ["tile/0/000", "tile/0/001.p/44", "checkpoint"]) {
      expect((await fetchPublic(`/logs/${a.log.log_id}/${path}`)).status, path).toBe(404);
    }
    await swap(b.log.log_id, a.log.log_id);
    const tile = await fetchPublic(`/logs/${a.log.log_id}/tile/0/000`);
    expect(tile.status).toBe(200);
    expect(decodeTile(tile.bytes, 256).map(base64Encode)).toEqual(await leavesOf(a.events, 0, 256));
    // Neither log took the other's name while the database said so.
    for (const x of [a, b]) {
      const log = (await call("GET", "/v1/log", { key: x.p.key })).json.data;
      expect(log.log_id).toBe(x.log.log_id);
      const checkpoint = new TextDecoder().decode((await fetchPublic(`/logs/${x.log.log_id}/checkpoint`)).bytes);
      expect(checkpoint.split("\n")[0]).toBe(log.origin);
      expect(await verify(x.p.key)).toMatchObject({ ok: true });
    }
  });

  it("a monitor with older state reports no fork because of a planted tile", async () => {
    const p = await createProject();
    await ingestMany(p.key, Array.from({ length: 300 }, (_, i) => ({ action: `m.${i}` })));
    const at300 = (await call("GET", "/v1/log", { key: p.key })).json.data;
    // Planted while the tree does not have it; the tree grows into it afterwards.
    await env.LOGS.put(tileObjectKey(at300.log_id, "tile/0/001"), junkTile());
    await ingestMany(p.key, Array.from({ length: 300 }, (_, i) => ({ action: `n.${i}` })));
    const fetcher: FetchLike = (url) => exports.default.fetch(new Request(url, { headers: { "CF-Connecting-IP": "10.7.6.5" } }));
    const saved = { tree_size: 300, root_hash: at300.root_hash };
    const run = await monitorLog({ publicUrl: at300.public_url, vkey: at300.vkey, saved, fetch: fetcher });
    const now = (await call("GET", "/v1/log", { key: p.key })).json.data;
    expect(run).toMatchObject({ status: "ok", tree_size: 600, root_hash: now.root_hash });
  });
});
