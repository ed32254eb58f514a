import { describe, expect, it } from "vitest";
import { signCheckpoint } from "../../src/tlog/checkpoint";
import { base64Encode } from "../../src/tlog/encoding";
import { TreeFrontier, leafHash } from "../../src/tlog/merkle";
import { createNoteSigner, formatVkey } from "../../src/tlog/note";
import { inclusionProof } from "../../src/tlog/proofs";
import { formatTlogProof, parseTlogProof, verifyTlogProof } from "../../src/tlog/tlog-proof";
import { naiveTree } from "./helpers";

/** The example of c2sp.org/tlog-proof (its signatures are elided in the spec, so only the layout is checked). */
const SPEC_EXAMPLE = `c2sp.org/tlog-proof@v1
extra YWdlLXYxLjIuMS1kYXJ3aW4tYXJtNjQudGFyLmd6kYXJ3aW4tYXJ
index 73894
gSKyXoYZUgZ6jduWYrkDOARinOMGJveXjgMkBTcdPlQ=
B95lDa8R83lS8n0eG+o0buTxRKQTYFi//1U8anccXmA=
EKNzoDWG8LGC0Yp9o+sv3qllpMP9uHQ9B20KNL+Q1zs=
RoopEkOdqkYqMB4MJXrbt/hMjOxsVn0IrWjpz1ZMMes=
AHCioX9nLjsrse6YhjRRmk1WUEirVOLLRoOQ6vfO5vk=

example.com/fancylog
109482
sFodV/vSp5O8n9a8QpW6PRY97tfOSW5bsc2Xl/EQi08=

— example.com/fancylog hI2DJw[...]1roloI=
`;

async function setup(size: number) {
  const pair = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as CryptoKeyPair;
  const pub = new Uint8Array((await crypto.subtle.exportKey("raw", pair.publicKey)) as ArrayBuffer);
  const signer = await createNoteSigner("log.example/logs/t", pair.privateKey, pub);
  const vkey = await formatVkey(signer.name, pub);
  // Leaf data is 32 bytes, like an event hash.
  const data = Array.from({ length: size }, (_, i) => new Uint8Array(32).fill(i + 1));
  const leaves = await Promise.all(data.map(leafHash));
  const f = TreeFrontier.empty();
  await f.appendMany(leaves);
  const checkpoint = await signCheckpoint({ origin: signer.name, size, rootHash: await f.root() }, signer);
  return { signer, vkey, data, leaves, checkpoint, tree: naiveTree(leaves) };
}

describe("tlog-proof format (c2sp.org/tlog-proof)", () => {
  it("parses the layout of the spec's example", () => {
    const p = parseTlogProof(SPEC_EXAMPLE);
    expect(p.index).toBe(73894);
    expect(p.proof).toHaveLength(5);
    expect(new TextDecoder().decode(p.extra)).toMatch(/^age-v1\.2\.1-darwin-arm64\.tar\.gz/);
    expect(p.checkpoint.startsWith("example.com/fancylog\n109482\n")).toBe(true);
    expect(formatTlogProof(p)).toBe(SPEC_EXAMPLE);
  });

  it("round-trips with and without extra data and with an empty proof", () => {
    const cp = "o\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n\u2014 o AAAAAQ==\n";
    for (const p of [
      { index: 0, proof: [], checkpoint: cp },
      { index: 5, proof: [new Uint8Array(32).fill(1), new Uint8Array(32).fill(2)], checkpoint: cp, extra: new Uint8Array([1, 2, 3]) },
      { index: 7, proof: [new Uint8Array(32)], checkpoint: cp, extra: new Uint8Array(0) },
    ]) {
      const text = formatTlogProof(p);
      expect(parseTlogProof(text)).toEqual(p);
    }
    expect(formatTlogProof({ index: 5, proof: [], checkpoint: cp })).toBe(`c2sp.org/tlog-proof@v1\nindex 5\n\n${cp}`);
  });

  it("rejects malformed proofs (the transparency-dev/merkle error cases and more)", () => {
    const h = base64Encode(new Uint8Array(32));
    const bad = [
      "wrong-header\nindex 0\n\ncheckpoint\n",
      "c2sp.org/tlog-proof@v1\nextra !!notbase64!!\nindex 0\n\ncheckpoint\n",
      "c2sp.org/tlog-proof@v1\n\n\ncheckpoint\n",
      "c2sp.org/tlog-proof@v1\nindex notanumber\n\ncheckpoint\n",
      "c2sp.org/tlog-proof@v1\nindex -5\n\ncheckpoint\n",
      "c2sp.org/tlog-proof@v1\nindex 05\n\ncheckpoint\n",
      "c2sp.org/tlog-proof@v1\nindex 0\n!!notbase64!!\n\ncheckpoint\n",
      `c2sp.org/tlog-proof@v1\nindex 0\n${base64Encode(new Uint8Array(64))}\n\ncheckpoint\n`,
      `c2sp.org/tlog-proof@v1\nindex 0\n${h}\n`,
      `c2sp.org/tlog-proof@v1\nindex 0\n${h}\n\n`,
      `c2sp.org/tlog-proof@v1\nindex 0\n${`${h}\n`.repeat(65)}\ncheckpoint\n`,
      "c2sp.org/tlog-proof@v2\nindex 0\n\ncheckpoint\n",
    ];
    for (const text of bad) expect(() => parseTlogProof(text), text).toThrow();
  });
});

describe("verifyTlogProof", async () => {
  const N = 37;
  const s = await setup(N);

  it("verifies every leaf, by data or by hash", async () => {
    for (let index = 0; index < N; index++) {
      const text = formatTlogProof({ index, proof: await inclusionProof(index, N, s.tree.getNode), checkpoint: s.checkpoint });
      const res = await verifyTlogProof(text, { leafData: s.data[index] }, s.vkey);
      expect(res.ok && res.index).toBe(index);
      expect(res.ok && res.checkpoint.size).toBe(N);
      expect((await verifyTlogProof(text, { leafHash: s.leaves[index] }, s.vkey)).ok).toBe(true);
      // Leaf data must not be mistaken for its hash.
      expect((await verifyTlogProof(text, { leafHash: s.data[index] }, s.vkey)).ok).toBe(false);
    }
  });

  it("rejects a wrong leaf, index, hash, checkpoint or key", async () => {
    const index = 20;
    const proof = await inclusionProof(index, N, s.tree.getNode);
    const good = formatTlogProof({ index, proof, checkpoint: s.checkpoint, extra: new Uint8Array([9]) });
    const ok = await verifyTlogProof(good, { leafData: s.data[index] }, s.vkey);
    expect(ok.ok && ok.extra).toEqual(new Uint8Array([9]));

    expect((await verifyTlogProof(good, { leafData: s.data[index + 1] }, s.vkey)).ok).toBe(false);
    const wrongIndex = formatTlogProof({ index: index + 1, proof, checkpoint: s.checkpoint });
    expect((await verifyTlogProof(wrongIndex, { leafData: s.data[index] }, s.vkey)).ok).toBe(false);
    const outside = formatTlogProof({ index: N, proof, checkpoint: s.checkpoint });
    expect((await verifyTlogProof(outside, { leafData: s.data[index] }, s.vkey)).ok).toBe(false);
    const flipped = proof.map((p, i) => (i === 2 ? p.map((b, j) => (j === 0 ? b ^ 1 : b)) : p));
    const badHash = formatTlogProof({ index, proof: flipped, checkpoint: s.checkpoint });
    expect((await verifyTlogProof(badHash, { leafData: s.data[index] }, s.vkey)).ok).toBe(false);
    const short = formatTlogProof({ index, proof: proof.slice(1), checkpoint: s.checkpoint });
    expect((await verifyTlogProof(short, { leafData: s.data[index] }, s.vkey)).ok).toBe(false);
    const tamperedCp = good.replace(`\n${N}\n`, `\n${N + 1}\n`);
    const res = await verifyTlogProof(tamperedCp, { leafData: s.data[index] }, s.vkey);
    expect(!res.ok && res.reason).toMatch(/invalid signature/);
    const other = await setup(N);
    expect((await verifyTlogProof(good, { leafData: s.data[index] }, other.vkey)).ok).toBe(false);
    expect((await verifyTlogProof("garbage", { leafData: s.data[index] }, s.vkey)).ok).toBe(false);
  });
});
