import { describe, expect, it } from "vitest";
import { formatCheckpoint, parseCheckpoint, signCheckpoint, verifyCheckpoint } from "../../src/tlog/checkpoint";
import { base64Encode } from "../../src/tlog/encoding";
import { createNoteSigner, formatVkey, signNote } from "../../src/tlog/note";
import { C2SP_CHECKPOINT_BODY } from "./vectors";

const ROOT = new Uint8Array(32).map((_, i) => i * 7);

async function signer(name: string) {
  const pair = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as CryptoKeyPair;
  const pub = new Uint8Array((await crypto.subtle.exportKey("raw", pair.publicKey)) as ArrayBuffer);
  return createNoteSigner(name, pair.privateKey, pub);
}

describe("checkpoint body (c2sp.org/tlog-checkpoint)", () => {
  it("parses the spec's example", () => {
    const cp = parseCheckpoint(C2SP_CHECKPOINT_BODY);
    expect(cp.origin).toBe("example.com/behind-the-sofa");
    expect(cp.size).toBe(20852163);
    expect(base64Encode(cp.rootHash)).toBe("CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=");
    expect(cp.extensions).toBeUndefined();
    expect(formatCheckpoint(cp)).toBe(C2SP_CHECKPOINT_BODY);
  });

  it("round-trips, with and without extension lines", () => {
    for (const cp of [
      { origin: "witness.example/logs/x", size: 0, rootHash: ROOT },
      { origin: "a", size: 9944, rootHash: ROOT, extensions: ["ext one", "ext two"] },
      { origin: "big", size: Number.MAX_SAFE_INTEGER, rootHash: ROOT },
    ]) {
      const text = formatCheckpoint(cp);
      expect(parseCheckpoint(text)).toEqual(cp);
    }
    expect(formatCheckpoint({ origin: "Banana", size: 9944, rootHash: ROOT })).toBe(`Banana\n9944\n${base64Encode(ROOT)}\n`);
  });

  it("rejects non-canonical or malformed bodies", () => {
    const root = base64Encode(ROOT);
    const bad = [
      `o\n012\n${root}\n`, `o\n-1\n${root}\n`, `o\n+1\n${root}\n`, `o\n 1\n${root}\n`, `o\n1.0\n${root}\n`, `o\n1e3\n${root}\n`,
      `o\n9007199254740992\n${root}\n`, `o\n\n${root}\n`, `\n1\n${root}\n`, `o\n1\n${root}`, `o\n1\n`, `o\n1\n${root}\n\n`,
      `o\n1\n${root}\next\n\n`, `o\r\n1\n${root}\n`, `o\n1\n${root.slice(0, -2)}=\n`, `o\n1\n${base64Encode(ROOT.slice(1))}\n`,
      `o\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2J=\n`, `o\n1\n${root.replace("=", "")}\n`, `o\n1\n${root} \n`,
    ];
    for (const text of bad) expect(() => parseCheckpoint(text), JSON.stringify(text)).toThrow();
    expect(() => formatCheckpoint({ origin: "", size: 1, rootHash: ROOT })).toThrow();
    expect(() => formatCheckpoint({ origin: "o", size: 1.5, rootHash: ROOT })).toThrow();
    expect(() => formatCheckpoint({ origin: "o", size: 1, rootHash: ROOT.slice(1) })).toThrow();
    expect(() => formatCheckpoint({ origin: "o", size: 1, rootHash: ROOT, extensions: [""] })).toThrow();
  });
});

describe("signed checkpoints", () => {
  it("verifies against the log's vkey and checks the origin", async () => {
    const log = await signer("witness.example/logs/abc");
    const vkey = await formatVkey(log.name, log.publicKey);
    const note = await signCheckpoint({ origin: log.name, size: 42, rootHash: ROOT }, log);
    const res = await verifyCheckpoint(note, vkey);
    expect(res.ok && res.checkpoint.size).toBe(42);

    const other = await signCheckpoint({ origin: "witness.example/logs/other", size: 42, rootHash: ROOT }, log);
    const wrongOrigin = await verifyCheckpoint(other, vkey);
    expect(!wrongOrigin.ok && wrongOrigin.reason).toMatch(/origin/);

    const forger = await signer(log.name);
    expect((await verifyCheckpoint(await signCheckpoint({ origin: log.name, size: 42, rootHash: ROOT }, forger), vkey)).ok).toBe(false);

    const garbage = await signNote(`${log.name}\n042\n${base64Encode(ROOT)}\n`, [log]);
    const res2 = await verifyCheckpoint(garbage, vkey);
    expect(!res2.ok && res2.reason).toMatch(/malformed checkpoint/);
  });

  it("keeps cosignatures from other keys and ignores them when verifying", async () => {
    const log = await signer("log.example/x");
    const witness = await signer("witness.example");
    const body = { origin: log.name, size: 7, rootHash: ROOT };
    const cosigned = await signNote(formatCheckpoint(body), [log, witness]);
    const res = await verifyCheckpoint(cosigned, await formatVkey(log.name, log.publicKey));
    expect(res.ok && res.unverified.map((s) => s.name)).toEqual(["witness.example"]);
  });
});
