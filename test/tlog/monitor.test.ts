import { describe, expect, it } from "vitest";
import { base64Encode } from "../../src/tlog/encoding";
import { monitorLog, type MonitorState } from "../../src/tlog/monitor";
import { BASE, FakeLog, newSigner } from "./fake-log";
import { makeLeafHashes } from "./helpers";

const SIZES = [1, 5, 255, 256, 1000, 4097, 65536, 70000];

describe("monitorLog", async () => {
  const leaves = await makeLeafHashes(70000);
  const log = await FakeLog.build(leaves, SIZES);
  const { signer, vkey } = await newSigner();
  const stateAt = (size: number): MonitorState => ({ tree_size: size, root_hash: base64Encode(log.roots.get(size)!) });
  const run = (saved: MonitorState | null, opts: { publicUrl?: string; key?: string } = {}) => {
    log.requests = [];
    return monitorLog({ publicUrl: opts.publicUrl ?? BASE, vkey: opts.key ?? vkey, saved, fetch: log.fetch });
  };

  it("trusts the first checkpoint after checking the tiles match its root", async () => {
    await log.publish(70000, signer);
    const res = await run(null);
    expect(res).toMatchObject({ status: "ok", tree_size: 70000, root_hash: stateAt(70000).root_hash });
    expect(res.status === "ok" && res.checkpoint).toBe(log.checkpoint);
    // The root of 70,000 needs exactly the three partial tiles.
    expect(log.tileRequests.sort()).toEqual(["tile/0/273.p/112", "tile/1/001.p/17", "tile/2/000.p/1"]);
  });

  it("accepts consistent growth, fetching O(log n) tiles", async () => {
    await log.publish(70000, signer);
    const res = await run(stateAt(1));
    expect(res).toMatchObject({ status: "ok", tree_size: 70000 });
    expect(log.tileRequests.length).toBeLessThan(3 * Math.log2(70000));
    expect(log.tileRequests.length).toBeLessThanOrEqual(6);
    expect(res.status === "ok" && res.tiles_fetched).toBe(log.tileRequests.length);
    expect(log.tileRequests.sort()).toEqual(["tile/0/000", "tile/0/273.p/112", "tile/1/000", "tile/1/001.p/17"]);

    for (const [from, to] of [[1, 5], [5, 255], [255, 256], [256, 1000], [1000, 4097], [4097, 65536], [65536, 70000], [5, 70000]]) {
      await log.publish(to, signer);
      const r = await run(stateAt(from));
      expect(r.status, `${from} -> ${to}`).toBe("ok");
      expect(log.tileRequests.length, `${from} -> ${to}`).toBeLessThanOrEqual(2 * 3);
    }
  });

  it("accepts an unchanged tree without fetching tiles, and a trailing slash in the URL", async () => {
    await log.publish(4097, signer);
    const res = await run(stateAt(4097), { publicUrl: `${BASE}/` });
    expect(res).toMatchObject({ status: "ok", tree_size: 4097, tiles_fetched: 0 });
    expect(log.tileRequests).toEqual([]);
  });

  it("fails on a smaller tree", async () => {
    await log.publish(1000, signer);
    const res = await run(stateAt(4097));
    expect(res).toEqual({ status: "fail", reason: "tree shrank from 4097 to 1000" });
  });

  it("fails on a different root for the same size", async () => {
    await log.publish(1000, signer, log.roots.get(4097));
    expect((await run(stateAt(1000))).status).toBe("fail");
  });

  it("fails on a validly signed checkpoint whose root is inconsistent", async () => {
    // Forged root, honest tiles.
    await log.publish(65536, signer, log.roots.get(70000));
    const forged = await run(stateAt(1000));
    expect(forged.status).toBe("fail");

    // A fork: a whole other tree that differs at leaf 10, served with its own tiles.
    const forkLeaves = leaves.slice(0, 5000);
    forkLeaves[10] = (await makeLeafHashes(1, 99))[0];
    const fork = await FakeLog.build(forkLeaves, [5000]);
    await fork.publish(5000, signer);
    const res = await monitorLog({ publicUrl: BASE, vkey, saved: stateAt(1000), fetch: fork.fetch });
    expect(res.status).toBe("fail");
    expect(res.status === "fail" && res.reason).toMatch(/not consistent/);
    // The same fork is fine for a monitor that only ever saw the first 10 leaves.
    expect((await monitorLog({ publicUrl: BASE, vkey, saved: stateAt(5), fetch: fork.fetch })).status).toBe("ok");
  });

  it("fails on a checkpoint signed by another key, or for another origin", async () => {
    const impostor = await newSigner();
    await log.publish(4097, impostor.signer);
    expect((await run(stateAt(1000))).status).toBe("fail");
    expect((await run(null)).status).toBe("fail");

    await log.publish(4097, signer);
    const other = await newSigner("witness.example/logs/other");
    const res = await run(stateAt(1000), { key: other.vkey });
    expect(res.status).toBe("fail");
    expect(res.status === "fail" && res.reason).toMatch(/no signature by a known key/);
  });

  it("fails when tiles contradict the signed root or are malformed", async () => {
    await log.publish(70000, signer);
    const wrong = new Uint8Array(112 * 32).fill(7);
    log.override.set("tile/0/273.p/112", FakeLog.respond(200, wrong));
    expect((await run(null)).status).toBe("fail");
    expect((await run(stateAt(1000))).status).toBe("fail");
    log.override.set("tile/0/273.p/112", FakeLog.respond(200, new Uint8Array(100)));
    const res = await run(stateAt(1000));
    expect(res.status === "fail" && res.reason).toMatch(/tile\/0\/273\.p\/112/);
    log.override.clear();
  });

  it("reports network and HTTP problems as errors, not failures", async () => {
    await log.publish(70000, signer);
    log.override.set("checkpoint", FakeLog.respond(503));
    expect(await run(stateAt(1000))).toEqual({ status: "error", message: `GET ${BASE}/checkpoint: HTTP 503` });
    log.override.set("checkpoint", "throw");
    expect((await run(stateAt(1000))).status).toBe("error");
    log.override.clear();
    log.override.set("tile/1/001.p/17", FakeLog.respond(404));
    expect((await run(stateAt(1000))).status).toBe("error");
    log.override.set("tile/1/001.p/17", "throw");
    expect((await run(null)).status).toBe("error");
    log.override.clear();
  });

  it("reports unusable arguments as errors", async () => {
    await log.publish(1000, signer);
    expect((await run(null, { key: "not a vkey" })).status).toBe("error");
    expect((await run({ tree_size: -1, root_hash: stateAt(5).root_hash })).status).toBe("error");
    expect((await run({ tree_size: 5, root_hash: "AAAA" })).status).toBe("error");
  });

  it("handles an empty log", async () => {
    const empty = await FakeLog.build([], [0]);
    await empty.publish(0, signer);
    const res = await monitorLog({ publicUrl: BASE, vkey, saved: null, fetch: empty.fetch });
    expect(res).toMatchObject({ status: "ok", tree_size: 0, tiles_fetched: 0 });
    await empty.publish(0, signer, log.roots.get(5));
    expect((await monitorLog({ publicUrl: BASE, vkey, saved: null, fetch: empty.fetch })).status).toBe("fail");
    await log.publish(5, signer);
    expect((await run({ tree_size: 0, root_hash: base64Encode(empty.roots.get(0)!) })).status).toBe("ok");
  });
});
