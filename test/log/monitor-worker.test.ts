import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { signCheckpoint } from "../../src/tlog/checkpoint";
import { base64Decode } from "../../src/tlog/encoding";
import { type FetchLike, type MonitorState, monitorLog } from "../../src/tlog/monitor";
import { formatVkey, noteSignerFromPkcs8 } from "../../src/tlog/note";
import { base64urlDecode } from "../../src/sealing/receipt-signing";
import { call, createProject, ingestMany } from "../helpers";
import { newSigner } from "../tlog/fake-log";

/** The monitor's fetch, answered by the worker itself; `override` replaces the checkpoint's bytes. */
function workerFetch(counter: { tiles: number }, override?: () => Promise<string>): FetchLike {
  return async (url) => {
    if (override && url.endsWith("/checkpoint")) {
      const body = new TextEncoder().encode(await override());
      return { ok: true, status: 200, arrayBuffer: async () => body.buffer as ArrayBuffer };
    }
    if (url.includes("/tile/")) counter.tiles++;
    return exports.default.fetch(new Request(url, { headers: { "CF-Connecting-IP": "10.7.7.7" } }));
  };
}

/** The deployment's real checkpoint key, as someone who stole it would use it. */
const stolenSigner = (origin: string) => {
  const entries = env.RECEIPT_SIGNING_KEYS.split(",");
  const newest = entries[entries.length - 1];
  return noteSignerFromPkcs8(origin, base64urlDecode(newest.slice(newest.indexOf(":") + 1)));
};

describe("the monitor against the worker's own log", () => {
  it("trusts the first checkpoint, then proves growth from O(log n) public tiles", async () => {
    const p = await createProject();
    await ingestMany(p.key, Array.from({ length: 300 }, (_, i) => ({ action: `m.${i}` })));
    const log = (await call("GET", "/v1/log", { key: p.key })).json.data;
    const counter = { tiles: 0 };
    const first = await monitorLog({ publicUrl: log.public_url, vkey: log.vkey, saved: null, fetch: workerFetch(counter) });
    expect(first).toMatchObject({ status: "ok", tree_size: 300, root_hash: log.root_hash });

    await ingestMany(p.key, Array.from({ length: 1100 }, (_, i) => ({ action: `n.${i}` })));
    counter.tiles = 0;
    const saved: MonitorState = { tree_size: 300, root_hash: log.root_hash };
    const next = await monitorLog({ publicUrl: log.public_url, vkey: log.vkey, saved, fetch: workerFetch(counter) });
    const now = (await call("GET", "/v1/log", { key: p.key })).json.data;
    expect(next).toMatchObject({ status: "ok", tree_size: 1400, root_hash: now.root_hash });
    expect(counter.tiles).toBeGreaterThan(0);
    expect(counter.tiles).toBeLessThanOrEqual(6);
  });

  it("fails on a forged checkpoint (valid signature, root not consistent), a smaller tree and an unknown key", async () => {
    const p = await createProject();
    await ingestMany(p.key, Array.from({ length: 40 }, (_, i) => ({ action: `o.${i}` })));
    const at40 = (await call("GET", "/v1/log", { key: p.key })).json.data;
    await ingestMany(p.key, Array.from({ length: 20 }, (_, i) => ({ action: `q.${i}` })));
    const at60 = (await call("GET", "/v1/log", { key: p.key })).json.data;
    const counter = { tiles: 0 };
    const run = (saved: MonitorState | null, fetch: FetchLike, vkey = at60.vkey) => monitorLog({ publicUrl: at60.public_url, vkey, saved, fetch });
    const saved40 = { tree_size: 40, root_hash: at40.root_hash };
    expect((await run(saved40, workerFetch(counter))).status).toBe("ok");

    // Signed with the real key, but the root belongs to no tree that extends the saved one.
    const forgedRoot = base64Decode(at60.root_hash);
    forgedRoot[0] ^= 1;
    const forged = async () => signCheckpoint({ origin: at60.origin, size: 60, rootHash: forgedRoot }, await stolenSigner(at60.origin));
    const fork = await run(saved40, workerFetch(counter, forged));
    expect(fork).toMatchObject({ status: "fail", reason: expect.stringContaining("not consistent") });
    // Same size as saved, another root.
    const split = await run({ tree_size: 60, root_hash: at60.root_hash }, workerFetch(counter, forged));
    expect(split).toMatchObject({ status: "fail", reason: expect.stringContaining("two different roots") });

    // A rollback: the log serves its older checkpoint to someone who saw the newer one.
    const rollback = await run({ tree_size: 60, root_hash: at60.root_hash }, workerFetch(counter, async () => at40.checkpoint));
    expect(rollback).toMatchObject({ status: "fail", reason: "tree shrank from 60 to 40" });

    // A key the customer never pinned: another key, or this key under another log's name.
    const other = await newSigner(at60.origin);
    expect(await run(null, workerFetch(counter), other.vkey)).toMatchObject({ status: "fail", reason: expect.stringContaining("checkpoint rejected") });
    const signer = await stolenSigner(at60.origin);
    const elsewhere = await formatVkey(`localhost:8787/logs/${"f".repeat(32)}`, signer.publicKey);
    expect(await run(null, workerFetch(counter), elsewhere)).toMatchObject({ status: "fail" });
  });

  it("reports network trouble and unknown logs as errors, not failures", async () => {
    const p = await createProject();
    const log = (await call("GET", "/v1/log", { key: p.key })).json.data;
    const down: FetchLike = async () => {
      throw new TypeError("connection refused");
    };
    expect(await monitorLog({ publicUrl: log.public_url, vkey: log.vkey, saved: null, fetch: down })).toMatchObject({ status: "error" });
    const unknown = log.public_url.replace(log.log_id, "0".repeat(32));
    const res = await monitorLog({ publicUrl: unknown, vkey: log.vkey, saved: null, fetch: workerFetch({ tiles: 0 }) });
    expect(res).toMatchObject({ status: "error", message: expect.stringContaining("HTTP 404") });
  });
});
