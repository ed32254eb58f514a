import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { canonicalize as serverCanonicalize } from "../../src/sealing/canonical";
import { loadReceiptKeys, signReceipt } from "../../src/sealing/receipt-signing";
import { canonicalize, parsePublicKeys, unwrapReceipt, verifyReceipt } from "../../src/scripts/receipt-check.mjs";

const BODY = {
  type: "witness.receipt.v1",
  event_id: "0b6c3c6e-1d2f-4a5b-8c7d-9e0f1a2b3c4d",
  action: "document.shared",
  actor: { type: "user", id: "u_1" },
  target: { type: "document", id: "doc_9" },
  occurred_at: "2026-05-05T05:05:05.000Z",
  hash: "e".repeat(64),
  prev_hash: null,
  signature: `v1:${"a".repeat(64)}`,
  seq: 1,
  valid: true,
  issued_at: "2026-05-06T00:00:00.000Z",
  verification_url: "https://witness.example/v1/receipts/0b6c3c6e-1d2f-4a5b-8c7d-9e0f1a2b3c4d",
  view_url: "https://witness.example/receipts/0b6c3c6e-1d2f-4a5b-8c7d-9e0f1a2b3c4d",
};

async function published(raw = env.RECEIPT_SIGNING_KEYS) {
  const keys = await loadReceiptKeys(raw);
  return parsePublicKeys(JSON.stringify({ keys: keys.published }));
}

/** A different value of the same JSON type, so every field is edited in turn. */
function edited(value: unknown): unknown {
  if (typeof value === "string") return `${value}x`;
  if (typeof value === "number") return value + 1;
  if (typeof value === "boolean") return !value;
  if (value === null) return "x";
  return { ...(value as object), id: "someone-else" };
}

describe("offline receipt verification", () => {
  it("accepts a receipt signed by the service with only the published public keys", async () => {
    const receipt = await signReceipt(await loadReceiptKeys(env.RECEIPT_SIGNING_KEYS), BODY);
    expect(receipt.proof.kid).toBe("test-2");
    expect(await verifyReceipt(receipt, await published())).toEqual({ ok: true, kid: "test-2" });
    expect(await verifyReceipt(unwrapReceipt({ data: receipt }), await published())).toEqual({ ok: true, kid: "test-2" });
  });

  it("rejects the receipt when any field is edited", async () => {
    const receipt = await signReceipt(await loadReceiptKeys(env.RECEIPT_SIGNING_KEYS), BODY);
    const keys = await published();
    for (const field of Object.keys(BODY) as Array<keyof typeof BODY>) {
      if (field === "type") continue;
      const result = await verifyReceipt({ ...receipt, [field]: edited(receipt[field]) }, keys);
      expect(result, field).toMatchObject({ ok: false });
    }
    expect(await verifyReceipt({ ...receipt, extra: 1 }, keys)).toMatchObject({ ok: false });
    expect(await verifyReceipt({ ...receipt, type: "witness.receipt.v2" }, keys)).toMatchObject({ ok: false });
    const otherSig = { ...receipt.proof, value: receipt.proof.value.replace(/^./, (c) => (c === "A" ? "B" : "A")) };
    expect(await verifyReceipt({ ...receipt, proof: otherSig }, keys)).toMatchObject({ ok: false });
  });

  it("needs the right key: another key or an unknown kid fails", async () => {
    const receipt = await signReceipt(await loadReceiptKeys(env.RECEIPT_SIGNING_KEYS), BODY);
    const [oldKey, signingKey] = await published();
    expect(await verifyReceipt(receipt, [oldKey])).toMatchObject({ ok: false, reason: expect.stringContaining("test-2") });
    expect(await verifyReceipt(receipt, [{ kid: "test-2", x: oldKey.x }])).toMatchObject({ ok: false });
    expect(await verifyReceipt(receipt, parsePublicKeys(signingKey.x))).toEqual({ ok: true, kid: "test-2" });
    expect(await verifyReceipt(receipt, parsePublicKeys(`test-2:${signingKey.x}`))).toEqual({ ok: true, kid: "test-2" });
  });

  it("keeps receipts of a retired signing key verifying while its public half is published", async () => {
    const [first] = env.RECEIPT_SIGNING_KEYS.split(",");
    const old = await signReceipt(await loadReceiptKeys(first), BODY);
    expect(old.proof.kid).toBe("test-1");
    expect(await verifyReceipt(old, await published())).toEqual({ ok: true, kid: "test-1" });
  });

  it("signs nothing without a configured key, and publishes none", async () => {
    const none = await loadReceiptKeys("");
    expect(none.published).toEqual([]);
    await expect(signReceipt(none, BODY)).rejects.toThrow(/RECEIPT_SIGNING_KEYS/);
    await expect(loadReceiptKeys("bad entry")).rejects.toThrow(/RECEIPT_SIGNING_KEYS/);
  });

  it("uses the same RFC 8785 text as the server", () => {
    const tricky = { b: [1e21, 0.1, -0, "é\u2028\n"], a: { "\u20ac": 1, "\r": null, "😀": true }, n: null };
    expect(canonicalize(tricky)).toBe(serverCanonicalize(tricky));
  });
});
