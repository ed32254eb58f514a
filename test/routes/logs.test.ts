import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { verifyCheckpoint } from "../../src/tlog/checkpoint";
import { base64Decode, base64Encode, hexDecode } from "../../src/tlog/encoding";
import { leafHash, rootFromLeafHashes } from "../../src/tlog/merkle";
import { verifyConsistency } from "../../src/tlog/proofs";
import { decodeTile, newTiles, tilePath } from "../../src/tlog/tiles";
import { verifyTlogProof } from "../../src/tlog/tlog-proof";
import { formatVkey } from "../../src/tlog/note";
import { tileObjectKey } from "../../src/log/log-directory";
import { base64urlDecode } from "../../src/sealing/receipt-signing";
import { BASE, call, createProject, ingest, ingestMany } from "../helpers";

/** A project with `n` events; returns it, its events and its log as GET /v1/log shows it. */
async function projectWith(n: number) {
  const p = await createProject();
  const events = await ingestMany(p.key, Array.from({ length: n }, (_, i) => ({ action: `log.test.${i % 7}`, actor: { id: `u_${i}`, name: "Secret Name" } })));
  const log = (await call("GET", "/v1/log", { key: p.key })).json.data;
  return { p, events, log };
}

/** Fetches a public log path as raw bytes, the way a tlog client does (no key). */
async function fetchPublic(path: string) {
  const res = await exports.default.fetch(new Request(`${BASE}${path}`, { headers: { "CF-Connecting-IP": "10.9.9.9" } }));
  return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) };
}

describe("GET /v1/log", () => {
  it("describes the log: unguessable id, origin, vkey, signed checkpoint of every event", async () => {
    const { p, events, log } = await projectWith(5);
    expect(log.log_id).toMatch(/^[0-9a-f]{32}$/);
    expect(log.log_id).not.toContain(p.id);
    expect(log.origin).toBe(`localhost:8787/logs/${log.log_id}`);
    expect(log.public_url).toBe(`${BASE}/logs/${log.log_id}`);
    expect(log).toMatchObject({ tree_size: 5, status: "ready", built_size: 5, head_seq: 5, blocked: null });
    const leaves = await Promise.all(events.map((e) => leafHash(hexDecode(e.hash))));
    expect(log.root_hash).toBe(base64Encode(await rootFromLeafHashes(leaves)));
    const cp = await verifyCheckpoint(log.checkpoint, log.vkey);
    expect(cp.ok && cp.checkpoint).toMatchObject({ origin: log.origin, size: 5 });
    // The public checkpoint is the same note, signed by the same key.
    const pub = await fetchPublic(`/logs/${log.log_id}/checkpoint`);
    expect(pub.status).toBe(200);
    expect(pub.headers.get("Content-Type")).toBe("text/plain; charset=utf-8");
    expect(new TextDecoder().decode(pub.bytes)).toBe(log.checkpoint);
  });

  it("a checkpoint covering an event is there right after its 201", async () => {
    const p = await createProject();
    const { log_id, vkey } = (await call("GET", "/v1/log", { key: p.key })).json.data;
    for (let i = 1; i <= 3; i++) {
      const e = (await ingest(p.key, { action: "x" })).json.data;
      const note = new TextDecoder().decode((await fetchPublic(`/logs/${log_id}/checkpoint`)).bytes);
      const cp = await verifyCheckpoint(note, vkey);
      expect(cp.ok && cp.checkpoint.size).toBe(i);
      const proof = (await call("GET", `/v1/events/${e.id}/proof`, { key: p.key })).json.data;
      expect((await verifyTlogProof(proof.proof, { leafData: hexDecode(e.hash) }, vkey)).ok).toBe(true);
    }
  });

  it("an empty project has the empty tree", async () => {
    const p = await createProject();
    const log = (await call("GET", "/v1/log", { key: p.key })).json.data;
    expect(log).toMatchObject({ tree_size: 0, root_hash: "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=" });
    expect((await verifyCheckpoint(log.checkpoint, log.vkey)).ok).toBe(true);
  });

  it("its vkey is the published checkpoint key, completed with the log's origin", async () => {
    const { log } = await projectWith(1);
    const known = (await call("GET", "/.well-known/witness-keys.json")).json;
    expect(known.log).toMatchObject({ signing_kid: "test-2", origin: "localhost:8787/logs/<log_id>", vkey: "<origin>+<key_id>+<key>" });
    expect(log.vkey.startsWith(`${log.origin}+`)).toBe(true);
    expect(log.vkey.endsWith(`+${known.log.key}`)).toBe(true);
    const x = known.keys.find((k: { kid: string }) => k.kid === "test-2").x;
    expect(await formatVkey(log.origin, base64urlDecode(x))).toBe(log.vkey);
  });

  it("needs an API key", async () => {
    expect((await call("GET", "/v1/log")).status).toBe(401);
  });
});

describe("tiles", () => {
  it("rebuild the signed root from public tiles, full ones immutable and cached in R2", async () => {
    const { log, events } = await projectWith(600);
    const tiles = newTiles(0, 600);
    expect(tiles.map((t) => tilePath(t.level, t.index, t.width))).toEqual(["tile/0/000", "tile/0/001", "tile/0/002.p/88", "tile/1/000.p/2"]);
    expect(await env.LOGS.head(tileObjectKey(log.log_id, "tile/0/001"))).toBeNull();
    const level0: Uint8Array[] = [];
    for (const t of tiles) {
      const res = await fetchPublic(`/logs/${log.log_id}/${tilePath(t.level, t.index, t.width)}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("Content-Type")).toBe("application/octet-stream");
      expect(res.headers.get("Cache-Control")).toBe(t.width === 256 ? "public, max-age=31536000, immutable" : "public, max-age=2");
      if (t.level === 0) level0.push(...decodeTile(res.bytes, t.width));
    }
    expect(level0).toHaveLength(600);
    expect(level0.map(base64Encode)).toEqual(await Promise.all(events.map(async (e) => base64Encode(await leafHash(hexDecode(e.hash))))));
    expect(base64Encode(await rootFromLeafHashes(level0))).toBe(log.root_hash);
    // Level 1 holds the roots of the full level-0 tiles.
    const level1 = decodeTile((await fetchPublic(`/logs/${log.log_id}/tile/1/000.p/2`)).bytes, 2);
    expect(base64Encode(level1[1])).toBe(base64Encode(await rootFromLeafHashes(level0.slice(256, 512))));
    // Full tiles are kept in R2 from their first read on; partial ones never are.
    const stored = await env.LOGS.get(tileObjectKey(log.log_id, "tile/0/001"));
    expect(stored && base64Encode(new Uint8Array(await stored.arrayBuffer()))).toBe(base64Encode((await fetchPublic(`/logs/${log.log_id}/tile/0/001`)).bytes));
    expect(await env.LOGS.head(tileObjectKey(log.log_id, "tile/0/002.p/88"))).toBeNull();
  });

  it("answer malformed paths 400 and unknown logs or tiles 404, in plain text, never 500", async () => {
    const { log } = await projectWith(3);
    const cases: Array<[string, number]> = [
      [`/logs/${log.log_id}/tile/0/000.p/3`, 200],
      [`/logs/${log.log_id}/tile/0/000.p/4`, 404], // wider than the tree
      [`/logs/${log.log_id}/tile/0/000`, 404], // not full yet
      [`/logs/${log.log_id}/tile/0/001.p/1`, 404],
      [`/logs/${log.log_id}/tile/1/000.p/1`, 404],
      [`/logs/${log.log_id}/tile/63/000.p/1`, 404],
      [`/logs/${log.log_id}/tile/64/000`, 400],
      [`/logs/${log.log_id}/tile/0/0`, 400],
      [`/logs/${log.log_id}/tile/00/000`, 400],
      [`/logs/${log.log_id}/tile/0/x000/001`, 400],
      [`/logs/${log.log_id}/tile/0/000.p/0`, 400],
      [`/logs/${log.log_id}/tile/0/000.p/256`, 400],
      [`/logs/${log.log_id}/tile/0/000.p/03`, 400],
      [`/logs/${log.log_id}/tile/0/x999/x999/x999/x999/x999/x999/999`, 400],
      [`/logs/${log.log_id}/tile/entries/000`, 404], // an entry bundle: well formed, never published
      [`/logs/${log.log_id}/tile/entries/0`, 400],
      [`/logs/${log.log_id}/tile/0/-01`, 400],
      [`/logs/${log.log_id}/nothing`, 404],
      [`/logs/${"0".repeat(32)}/checkpoint`, 404],
      [`/logs/${"0".repeat(32)}/tile/0/000.p/1`, 404],
      ["/logs/not-a-log-id/checkpoint", 404],
      [`/logs/${log.log_id.toUpperCase()}/checkpoint`, 404],
      ["/logs/", 404],
    ];
    for (const [path, status] of cases) {
      const res = await fetchPublic(path);
      expect(res.status, path).toBe(status);
      if (status !== 200) {
        expect(res.headers.get("Content-Type"), path).toMatch(/^text\/plain/);
        expect(new TextDecoder().decode(res.bytes), path).toMatch(/\n$/);
      }
    }
  });
});

describe("proofs", () => {
  it("every event of a small project has an inclusion proof that verifies against the checkpoint", async () => {
    const { p, events, log } = await projectWith(13);
    for (const e of events) {
      const res = await call("GET", `/v1/events/${e.id}/proof`, { key: p.key });
      expect(res.status).toBe(200);
      expect(res.json.data).toMatchObject({ index: e.seq - 1, tree_size: 13 });
      const ok = await verifyTlogProof(res.json.data.proof, { leafData: hexDecode(e.hash) }, log.vkey);
      expect(ok.ok, e.seq).toBe(true);
      // Another event's hash does not pass with this proof.
      const other = events[(e.seq % 13)];
      expect((await verifyTlogProof(res.json.data.proof, { leafData: hexDecode(other.hash) }, log.vkey)).ok).toBe(false);
    }
  });

  it("consistency proofs between sizes verify against the roots at those sizes", async () => {
    const p = await createProject();
    const roots: string[] = [(await call("GET", "/v1/log", { key: p.key })).json.data.root_hash];
    for (let n = 1; n <= 9; n++) {
      await ingest(p.key, { action: `c.${n}` });
      roots.push((await call("GET", "/v1/log", { key: p.key })).json.data.root_hash);
    }
    for (let m = 0; m <= 9; m++) {
      for (let n = m; n <= 9; n++) {
        const res = await call("GET", `/v1/log/consistency?from=${m}&to=${n}`, { key: p.key });
        expect(res.status, `${m}->${n}`).toBe(200);
        expect(res.json.data).toMatchObject({ from: m, to: n });
        const proof = res.json.data.proof.map(base64Decode);
        expect(await verifyConsistency(m, n, proof, base64Decode(roots[m]), base64Decode(roots[n])), `${m}->${n}`).toBe(true);
      }
    }
    const toNewest = await call("GET", "/v1/log/consistency?from=3", { key: p.key });
    expect(toNewest.json.data).toMatchObject({ from: 3, to: 9 });
  });

  it("refuses bad sizes with 400 VALIDATION_ERROR", async () => {
    const { p } = await projectWith(4);
    for (const q of ["from=3&to=2", "from=5", "from=1&to=5", "", "from=-1", "from=01", "from=1.5", "from=a", "from=1&from=2", "from=99999999999999999999"]) {
      const res = await call("GET", `/v1/log/consistency?${q}`, { key: p.key });
      expect(res.status, q).toBe(400);
      expect(res.json.error.code, q).toBe("VALIDATION_ERROR");
    }
  });

  it("keeps projects apart: A's key gets neither B's event proofs nor B's log", async () => {
    const a = await projectWith(2);
    const b = await projectWith(2);
    const res = await call("GET", `/v1/events/${b.events[0].id}/proof`, { key: a.p.key });
    expect(res.status).toBe(404);
    expect(res.json.error.code).toBe("NOT_FOUND");
    expect(a.log.log_id).not.toBe(b.log.log_id);
    expect((await call("GET", "/v1/events/no-such-id/proof", { key: a.p.key })).status).toBe(404);
  });

  it("embed tokens cannot ask for proofs or the log", async () => {
    const { p, events } = await projectWith(1);
    const token = (await call("POST", "/v1/embed/token", { key: p.key, body: {} })).json.data.token;
    expect((await call("GET", `/v1/events/${events[0].id}/proof`, { key: token })).status).toBe(403);
    expect((await call("GET", "/v1/log", { key: token })).status).toBe(403);
    expect((await call("GET", "/v1/log/consistency?from=0", { key: token })).status).toBe(403);
  });

  it("public endpoints show hashes and sizes only, never event content", async () => {
    const { log } = await projectWith(3);
    const bodies = [
      new TextDecoder().decode((await fetchPublic(`/logs/${log.log_id}/checkpoint`)).bytes),
      new TextDecoder("latin1").decode((await fetchPublic(`/logs/${log.log_id}/tile/0/000.p/3`)).bytes),
    ];
    for (const body of bodies) {
      expect(body).not.toContain("Secret Name");
      expect(body).not.toContain("u_0");
      expect(body).not.toContain("log.test");
    }
  });
});
