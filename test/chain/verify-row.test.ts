import { describe, expect, it } from "vitest";
import { canonicalPayload, chainHash, rowCommitment } from "../../src/sealing/payload";
import { checkRow } from "../../src/chain/chain-check";
import { checkSignature, loadKeyring, sign } from "../../src/sealing/signing-keys";
import { hexDecode, hexEncode } from "../../src/tlog/encoding";
import { eventLeafHash } from "../../src/tlog/leaf-check";
import { leafHash } from "../../src/tlog/merkle";
import { K1, K2 } from "./verify-fixtures";
import type { ChainRow } from "../../src/model/chain-row";

/**
 * What checkRow must equal, from the reference functions the ledger's side is
 * built from: the payload carries the stored commitment (the one reads and
 * exports show), which the salted personal data must recommit to.
 */
async function reference(keys: string, row: ChainRow, leaf: Uint8Array | null = null) {
  const ring = await loadKeyring(keys);
  const commitment = await rowCommitment(row);
  if (commitment === null || (row.pii_salt === null && row.anonymized_at === null)) {
    return { hash: false, signature: row.signature === null ? null : false, leaf: true };
  }
  const payload = canonicalPayload(row, row.pii_commitment);
  return {
    hash: commitment === row.pii_commitment && (await chainHash(row.prev_hash, payload)) === row.hash,
    signature: row.signature === null ? null : await checkSignature(ring, payload, row.signature),
    leaf: leaf === null || hexEncode(leaf) === (await eventLeafHash(row.hash)),
  };
}

async function signedRow(keys: string, overrides: Partial<ChainRow>): Promise<ChainRow> {
  const row: ChainRow = {
    id: crypto.randomUUID(),
    project_id: "p",
    seq: 3,
    action: "document.shared",
    organization: "org_1",
    actor_id: "u_1",
    actor_type: "user",
    actor_name: "Ada",
    actor_email: "ada@example.com",
    targets: '[{"id":"d","name":null,"type":"doc"}]',
    metadata: '{"a":"\\u0000é😀\\n"}',
    occurred_at: "2026-05-05T05:05:05.000Z",
    ip_address: "203.0.113.9",
    user_agent: "Mozilla/5.0 (X11; Linux) \"quoted\" ünïcode \u2028",
    pii_salt: "0f".repeat(16),
    pii_commitment: "",
    hash: "",
    prev_hash: "ab".repeat(32),
    signature: null,
    anonymized_at: null,
    changes: null,
    schema_version: null,
    schema_valid: null,
    ...overrides,
  };
  const commitment = (await rowCommitment({ ...row, pii_salt: row.pii_salt ?? "0f".repeat(16) }))!;
  const payload = canonicalPayload(row, commitment);
  return {
    ...row,
    pii_commitment: commitment,
    hash: await chainHash(row.prev_hash, payload),
    signature: await sign(await loadKeyring(keys), payload),
    ...overrides,
  };
}

describe("checkRow", () => {
  it("agrees with rowCommitment, chainHash and checkSignature on good and tampered rows", async () => {
    const keys = `${K1},${K2}`;
    const rows = [
      await signedRow(keys, {}),
      await signedRow(keys, { prev_hash: null, seq: 1 }),
      await signedRow(keys, { action: "多字节 action 😀".repeat(20), actor_name: null, organization: null }),
      await signedRow(K1, {}),
    ];
    const tampered = [
      { ...rows[0], action: "x" },
      { ...rows[0], actor_email: "eve@example.com" },
      { ...rows[0], prev_hash: "cd".repeat(32) },
      { ...rows[0], signature: rows[1].signature },
      { ...rows[0], signature: null },
      { ...rows[0], signature: "v9:" + "0".repeat(64) },
      { ...rows[0], signature: "garbage" },
      { ...rows[0], pii_salt: null },
      // The commitment shown to readers, edited alone: the personal data no longer recommits to it.
      { ...rows[0], pii_commitment: "00".repeat(32) },
      { ...rows[0], pii_salt: null, anonymized_at: "2026-06-01T00:00:00.000Z" },
      {
        ...rows[0],
        pii_salt: null,
        anonymized_at: "2026-06-01T00:00:00.000Z",
        actor_id: null,
        actor_name: null,
        actor_email: null,
        ip_address: null,
        user_agent: null,
      },
    ];
    const ring = await loadKeyring(keys);
    for (const row of [...rows, ...tampered]) {
      expect(await checkRow(ring, row)).toEqual(await reference(keys, row));
    }
    expect(await checkRow(ring, rows[2])).toEqual({ hash: true, signature: true, leaf: true });
    expect(await checkRow(ring, tampered[10])).toEqual({ hash: true, signature: true, leaf: true });
    expect((await checkRow(ring, tampered[8])).hash).toBe(false);
  });

  it("checks the row's hash against its expected RFC 6962 leaf in the same pass", async () => {
    const keys = `${K1},${K2}`;
    const ring = await loadKeyring(keys);
    const row = await signedRow(keys, {});
    // The leaf as RFC 6962 defines it, computed apart from checkRow: SHA-256(0x00 || hash bytes).
    const leaf = await leafHash(hexDecode(row.hash));
    const other = await leafHash(hexDecode("cd".repeat(32)));
    expect(await checkRow(ring, row, leaf)).toEqual({ hash: true, signature: true, leaf: true });
    expect(await checkRow(ring, row, other)).toEqual({ hash: true, signature: true, leaf: false });
    for (const candidate of [leaf, other]) expect(await checkRow(ring, row, candidate)).toEqual(await reference(keys, row, candidate));
    expect((await checkRow(ring, { ...row, hash: "zz".repeat(32) }, leaf)).leaf).toBe(false);
  });

  it("gives the same answers when many checks run at once (receipts check concurrently)", async () => {
    const keys = `${K1},${K2}`;
    const ring = await loadKeyring(keys);
    // Rows of very different sizes, so the checks' shared scratch space is reused and regrown meanwhile.
    const rows = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        signedRow(keys, { seq: i + 2, metadata: JSON.stringify({ note: "é".repeat(i * 900) }), actor_name: `A${i}` }),
      ),
    );
    const mixed = rows.map((row, i) => (i % 3 === 0 ? { ...row, action: "edited" } : row));
    const expected = await Promise.all(mixed.map((row) => reference(keys, row)));
    expect(await Promise.all(mixed.map((row) => checkRow(ring, row)))).toEqual(expected);
    expect(expected.filter((r) => r.hash).length).toBe(16);
  });
});
