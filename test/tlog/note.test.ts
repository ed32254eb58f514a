import { describe, expect, it } from "vitest";
import { base64Decode, concatBytes, hexDecode } from "../../src/tlog/encoding";
import {
  createNoteSigner,
  formatVkey,
  noteKeyId,
  noteSignerFromPkcs8,
  parseNote,
  parseVkey,
  signNote,
  verifyNote,
} from "../../src/tlog/note";
import {
  C2SP_NOTE,
  C2SP_VKEY,
  GO_ENOCH_SIG,
  GO_ENOCH_VKEY,
  GO_PETER_SIG,
  GO_PETER_VKEY,
  GO_SKEY,
  GO_TEXT,
} from "./vectors";

/** PKCS#8 wrapping of a raw Ed25519 seed (RFC 8410), so WebCrypto can import Go's test key. */
const pkcs8FromSeed = (seed: Uint8Array) => concatBytes(hexDecode("302e020100300506032b657004220420"), seed);
/** The first fixed test key of test/vitest.config.ts RECEIPT_SIGNING_KEYS (base64url PKCS#8). */
const TEST_PKCS8 = base64Decode("MC4CAQAwBQYDK2VwBCIEIGHefepuyS5KQInooVHePmKmN9op8r20BdH5omtcDWjz");

async function freshSigner(name: string) {
  const pair = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as CryptoKeyPair;
  const pub = new Uint8Array((await crypto.subtle.exportKey("raw", pair.publicKey)) as ArrayBuffer);
  return createNoteSigner(name, pair.privateKey, pub);
}

describe("C2SP signed-note example", () => {
  it("verifies the published note with the published vkey", async () => {
    const key = await parseVkey(C2SP_VKEY);
    expect(key.name).toBe("example.com/foo");
    expect(key.keyId).toBe(0x530d903a);
    const res = await verifyNote(C2SP_NOTE, key);
    expect(res.ok).toBe(true);
    if (res.ok) {
      expect(res.text).toBe("This is an example message.\n");
      expect(res.verified.map((s) => s.name)).toEqual(["example.com/foo"]);
    }
    expect(await formatVkey(key.name, key.publicKey)).toBe(C2SP_VKEY);
  });

  it("rejects the note when any byte of text or signature changes", async () => {
    const key = await parseVkey(C2SP_VKEY);
    expect((await verifyNote(C2SP_NOTE.replace("example message", "example massage"), key)).ok).toBe(false);
    expect((await verifyNote(C2SP_NOTE.replace("Uw2QOkn8", "Uw2QOkn9"), key)).ok).toBe(false);
    expect((await verifyNote(C2SP_NOTE.replace("IneyaQM=", "IneyaQA="), key)).ok).toBe(false);
    expect((await verifyNote(C2SP_NOTE.replace("This", "this"), key)).ok).toBe(false);
  });
});

describe("golang.org/x/mod sumdb/note vectors", () => {
  it("signs exactly like Go's TestSign", async () => {
    const skey = base64Decode(GO_SKEY.split("+").slice(4).join("+"));
    expect(skey[0]).toBe(1);
    const priv = await crypto.subtle.importKey("pkcs8", pkcs8FromSeed(skey.slice(1)), { name: "Ed25519" }, false, ["sign"]);
    const peter = await parseVkey(GO_PETER_VKEY);
    const signer = await createNoteSigner("PeterNeumann", priv, peter.publicKey);
    expect(signer.keyId).toBe(0xc74f20a3);
    expect(await signNote(GO_TEXT, [signer])).toBe(`${GO_TEXT}\n${GO_PETER_SIG}`);
    // An existing signature by the same key is replaced, as in Go.
    const stale = parseNote(`${GO_TEXT}\n${GO_ENOCH_SIG}${GO_PETER_SIG}`).signatures;
    expect(await signNote(GO_TEXT, [signer], stale)).toBe(`${GO_TEXT}\n${GO_ENOCH_SIG}${GO_PETER_SIG}`);
  });

  it("opens like Go's TestOpen", async () => {
    const peter = await parseVkey(GO_PETER_VKEY);
    const enoch = await parseVkey(GO_ENOCH_VKEY);
    const msg = `${GO_TEXT}\n${GO_PETER_SIG}${GO_ENOCH_SIG}`;

    const one = await verifyNote(msg, [peter]);
    expect(one.ok && one.verified.map((s) => s.name)).toEqual(["PeterNeumann"]);
    expect(one.ok && one.unverified.map((s) => [s.name, s.keyId])).toEqual([["EnochRoot", 0xaf0cfe78]]);
    const both = await verifyNote(msg, [peter, enoch]);
    expect(both.ok && both.verified.map((s) => s.name)).toEqual(["PeterNeumann", "EnochRoot"]);
    expect(await verifyNote(msg, [])).toEqual({ ok: false, reason: "no signature by a known key" });

    const corrupt = `${GO_TEXT}\n${GO_PETER_SIG.slice(0, 60)}ABCD${GO_PETER_SIG.slice(60)}`;
    expect(await verifyNote(corrupt, [peter])).toEqual({ ok: false, reason: "invalid signature for key PeterNeumann+c74f20a3" });

    const dup = await verifyNote(`${GO_TEXT}\n${GO_PETER_SIG}${GO_PETER_SIG}${GO_ENOCH_SIG}`, [peter]);
    expect(dup.ok && dup.verified).toHaveLength(1);

    const bad = [
      GO_TEXT,
      `${GO_TEXT}\n`,
      `${GO_TEXT}\n${GO_PETER_SIG.slice(0, -1)}`,
      `\x01${GO_TEXT}\n${GO_PETER_SIG}`,
      `${GO_TEXT}\n\u2014 Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n`,
      `${GO_TEXT}\n${GO_PETER_SIG}Unexpected line.\n`,
      `${GO_TEXT}\n${GO_PETER_SIG.repeat(101)}`,
      `${GO_TEXT}\n${GO_PETER_SIG.replace("\u2014", "-")}`,
    ];
    for (const m of bad) {
      const res = await verifyNote(m, [peter]);
      expect(res.ok, JSON.stringify(m)).toBe(false);
      expect(!res.ok && res.reason).toMatch(/^malformed note/);
    }
    // Invalid UTF-8 bytes are refused rather than replaced.
    const bytes = concatBytes(new Uint8Array([0xff]), new TextEncoder().encode(`${GO_TEXT}\n${GO_PETER_SIG}`));
    expect((await verifyNote(bytes, [peter])).ok).toBe(false);
    expect((await verifyNote(new TextEncoder().encode(msg), [peter])).ok).toBe(true);
  });

  it("ignores a signature whose key shares only the name or only the ID", async () => {
    const peter = await parseVkey(GO_PETER_VKEY);
    const sameName = GO_ENOCH_SIG.replace("EnochRoot", "PeterNeumann");
    const res = await verifyNote(`${GO_TEXT}\n${sameName}${GO_PETER_SIG}`, [peter]);
    expect(res.ok && res.unverified.map((s) => s.name)).toEqual(["PeterNeumann"]);
  });

  it("rejects every mangled vkey, like Go's TestNewVerifier", async () => {
    await parseVkey(GO_PETER_VKEY);
    const mangled = new Set<string>();
    for (let i = 0; i <= GO_PETER_VKEY.length; i++) {
      for (let j = i + 1; j <= GO_PETER_VKEY.length; j++) if (i !== 0 || j !== GO_PETER_VKEY.length) mangled.add(GO_PETER_VKEY.slice(i, j));
    }
    for (let i = 0; i < GO_PETER_VKEY.length; i++) {
      mangled.add(GO_PETER_VKEY.slice(0, i) + String.fromCharCode(GO_PETER_VKEY.charCodeAt(i) + 1) + GO_PETER_VKEY.slice(i + 1));
    }
    mangled.add("PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==");
    mangled.add("PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW");
    for (const vkey of mangled) await expect(parseVkey(vkey), vkey).rejects.toThrow();
  });
});

describe("signing and verifying", () => {
  it("round-trips with a generated key and derives the key ID per the spec", async () => {
    const signer = await freshSigner("witness.example/logs/abc");
    const vkey = await formatVkey(signer.name, signer.publicKey);
    const key = await parseVkey(vkey);
    const digest = new Uint8Array(
      await crypto.subtle.digest("SHA-256", concatBytes(new TextEncoder().encode(`${signer.name}\n`), new Uint8Array([1]), signer.publicKey)),
    );
    expect(key.keyId).toBe(new DataView(digest.buffer).getUint32(0));
    expect(await noteKeyId(signer.name, 1, signer.publicKey)).toBe(key.keyId);
    const note = await signNote("hello\n\nworld\n", [signer]);
    const res = await verifyNote(note, key);
    expect(res.ok && res.text).toBe("hello\n\nworld\n");
  });

  it("imports RECEIPT_SIGNING_KEYS-style PKCS#8 keys", async () => {
    const signer = await noteSignerFromPkcs8("example.org/log", TEST_PKCS8);
    const note = await signNote("text\n", [signer]);
    expect((await verifyNote(note, await parseVkey(await formatVkey("example.org/log", signer.publicKey)))).ok).toBe(true);
  });

  it("treats another key with the same name as unknown and requires a known one", async () => {
    const real = await freshSigner("log.example");
    const impostor = await freshSigner("log.example");
    const key = await parseVkey(await formatVkey(real.name, real.publicKey));
    expect((await verifyNote(await signNote("x\n", [impostor]), key)).ok).toBe(false);
    expect((await verifyNote(await signNote("x\n", [impostor, real]), key)).ok).toBe(true);
  });

  it("refuses text it could not sign faithfully", async () => {
    const signer = await freshSigner("a");
    await expect(signNote("no newline", [signer])).rejects.toThrow();
    await expect(signNote("tab\there\n", [signer])).rejects.toThrow();
    await expect(signNote("lone \ud800 surrogate\n", [signer])).rejects.toThrow();
    await expect(freshSigner("has space")).rejects.toThrow();
    await expect(freshSigner("has+plus")).rejects.toThrow();
    await expect(freshSigner("")).rejects.toThrow();
  });
});
