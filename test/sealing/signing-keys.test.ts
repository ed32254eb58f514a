import { describe, expect, it } from "vitest";
import { hmacHex, importHmacKey } from "../../src/lib/crypto";
import { checkSignature, loadKeyring, parseSigningKeys, sign } from "../../src/sealing/signing-keys";

describe("signing keys", () => {
  it("signs with the newest version and prefixes it as v<N>:", async () => {
    const ring = await loadKeyring("2:second-secret-0123456789,1:first-secret-0123456789,10:tenth-secret-0123456789");
    expect(ring.newest).toBe(10);
    const signature = await sign(ring, "payload");
    expect(signature).toBe(`v10:${await hmacHex(await importHmacKey("tenth-secret-0123456789"), "payload")}`);
  });

  it("checks each signature with the key its version names, so older events keep verifying", async () => {
    const old = await loadKeyring("1:first-secret-0123456789");
    const rotated = await loadKeyring("1:first-secret-0123456789,2:second-secret-0123456789");
    const before = await sign(old, "p");
    const after = await sign(rotated, "p");
    expect(before.startsWith("v1:")).toBe(true);
    expect(after.startsWith("v2:")).toBe(true);
    expect(await checkSignature(rotated, "p", before)).toBe(true);
    expect(await checkSignature(rotated, "p", after)).toBe(true);
    expect(await checkSignature(rotated, "q", after)).toBe(false);
    // A version the ring does not hold, a swapped prefix, or no signature: never valid.
    expect(await checkSignature(old, "p", after)).toBe(false);
    expect(await checkSignature(rotated, "p", after.replace("v2:", "v1:"))).toBe(false);
    expect(await checkSignature(rotated, "p", null)).toBe(false);
    expect(await checkSignature(rotated, "p", "garbage")).toBe(false);
  });

  it("refuses a malformed SIGNING_KEYS instead of signing with something unexpected", () => {
    for (const raw of [undefined, "", "secret-without-version-0123", "0:zero-version-secret-0123", "1:short", "x:abcdefghijklmnopq"]) {
      expect(() => parseSigningKeys(raw), String(raw)).toThrow();
    }
    expect([...parseSigningKeys(" 1:abcdefghijklmnop , 3:qrstuvwxyz0123456 ").keys()]).toEqual([1, 3]);
  });
});
