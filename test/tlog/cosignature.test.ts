import { describe, expect, it } from "vitest";
import {
  cosignatureLine, cosignatureMessage, createCosigner, formatAddCheckpoint, formatCosignerVkey, parseAddCheckpoint,
  parseCosignerVkey, parseTreeSizeBody, validCosignatureLines,
} from "../../src/tlog/cosignature";
import { LogFormatError, utf8 } from "../../src/tlog/encoding";
import { formatVkey } from "../../src/tlog/note";
import { makeLeafHashes } from "./helpers";

const BODY = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n";

async function cosigner(name = "witness.example.com/w1") {
  const pair = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as CryptoKeyPair;
  const pub = new Uint8Array((await crypto.subtle.exportKey("raw", pair.publicKey)) as ArrayBuffer);
  return { signer: await createCosigner(name, pair.privateKey, pub), vkey: await formatCosignerVkey(name, pub), pub };
}

describe("tlog-cosignature (Ed25519)", () => {
  it("signs the cosignature/v1 message with a timestamp, as the spec's example lays it out", async () => {
    expect(utf8.decode(cosignatureMessage(BODY, 1679315147))).toBe(`cosignature/v1\ntime 1679315147\n${BODY}`);
    const { signer, vkey } = await cosigner();
    const line = await cosignatureLine(signer, BODY, 1679315147);
    expect(line).toMatch(/^\u2014 witness\.example\.com\/w1 [A-Za-z0-9+/]{102}==\n$/); // 4 + 8 + 64 bytes
    expect(await validCosignatureLines(await parseCosignerVkey(vkey), BODY, line)).toEqual([line]);
    // Another body, another key, or a log-type (0x01) key: not a cosignature.
    expect(await validCosignatureLines(await parseCosignerVkey(vkey), BODY.replace("20852163", "20852164"), line)).toEqual([]);
    expect(await validCosignatureLines(await parseCosignerVkey((await cosigner()).vkey), BODY, line)).toEqual([]);
  });

  it("uses type 0x04 key IDs, so a log vkey is not a cosigner vkey", async () => {
    const { pub, vkey } = await cosigner();
    expect(vkey).toMatch(/^witness\.example\.com\/w1\+[0-9a-f]{8}\+B/); // base64 of 0x04 || key starts with B
    const logKey = await formatVkey("witness.example.com/w1", pub);
    expect(logKey.split("+")[1]).not.toBe(vkey.split("+")[1]);
    await expect(parseCosignerVkey(logKey)).rejects.toThrow(LogFormatError);
    await expect(parseCosignerVkey(vkey.replace(/\+[0-9a-f]{8}\+/, "+00000000+"))).rejects.toThrow(LogFormatError);
  });
});

describe("tlog-witness add-checkpoint bodies", () => {
  it("round-trip: old size, proof lines, blank line, checkpoint", async () => {
    const proof = await makeLeafHashes(3);
    const note = `${BODY}\n\u2014 example.com/behind-the-sofa AAAA\n`;
    const body = formatAddCheckpoint(20852014, proof, note);
    expect(body.split("\n").slice(0, 5)).toEqual(["old 20852014", ...proof.map((p) => btoa(String.fromCharCode(...p))), ""]);
    expect(parseAddCheckpoint(body)).toEqual({ oldSize: 20852014, proof, checkpoint: note });
    expect(formatAddCheckpoint(0, [], note)).toBe(`old 0\n\n${note}`);
  });

  it("rejects malformed bodies and sizes", () => {
    for (const bad of ["", "old\n\n", "old 01\n\nx", "old 1\nnot-base64\n\nx", "old 1\nAAAA\n"]) {
      expect(() => parseAddCheckpoint(bad), JSON.stringify(bad)).toThrow(LogFormatError);
    }
    expect(parseTreeSizeBody("42\n")).toBe(42);
    for (const bad of ["42", "042\n", "-1\n", "\n"]) expect(() => parseTreeSizeBody(bad)).toThrow(LogFormatError);
  });
});
