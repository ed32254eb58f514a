/// <reference types="vite/client" />
import { describe, expect, it } from "vitest";
import readme from "../../src/docs/api.md?raw";
import { canonicalize } from "../../src/sealing/canonical";
import { canonicalPayload, chainHash, piiCommitment, rowCommitment } from "../../src/sealing/payload";
import { loadKeyring, sign } from "../../src/sealing/signing-keys";

/** The worked example of src/docs/api.md "Canonical payload, hash and signature"; a third party must get the same bytes. */
const EXAMPLE = {
  key: "1:readme-example-signing-key",
  salt: "5f0c2a9e7d3b1a4c6e8f0a2b4c6d8e1f",
  pii: { actor_id: "u_1", actor_name: "Ada", actor_email: "ada@example.com", ip_address: "203.0.113.9", user_agent: "curl/8.5" },
  fields: {
    id: "0b6c3c6e-1d2f-4a5b-8c7d-9e0f1a2b3c4d",
    project_id: "demo",
    seq: 2,
    action: "document.shared",
    organization: "org_42",
    actor_type: "user",
    targets: canonicalize([{ type: "document", id: "doc_9", name: "Q3 plan" }]),
    metadata: canonicalize({ via: "share-dialog" }),
    occurred_at: "2026-05-05T05:05:05.000Z",
  },
  prevHash: "8f2a3c5e7b9d1f3a5c7e9b1d3f5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a",
};

const EXPECTED = {
  piiJcs: '{"actor_email":"ada@example.com","actor_id":"u_1","actor_name":"Ada","ip_address":"203.0.113.9","user_agent":"curl/8.5"}',
  pii: "a121dfef3e543a9c374e62d71c1762154e3e738a8e60db8e9ea48bdbcb552dee",
  payload:
    '{"action":"document.shared","actor_type":"user","id":"0b6c3c6e-1d2f-4a5b-8c7d-9e0f1a2b3c4d","metadata":{"via":"share-dialog"},' +
    '"occurred_at":"2026-05-05T05:05:05.000Z","organization":"org_42","pii":"a121dfef3e543a9c374e62d71c1762154e3e738a8e60db8e9ea48bdbcb552dee",' +
    '"project_id":"demo","seq":2,"targets":[{"id":"doc_9","name":"Q3 plan","type":"document"}],"v":1}',
  hash: "ee49170aa7f59566e2081a2100a2159218e37a8b436bcc7c3f480d68e21bcbfd",
  signature: "v1:041eb234d527c64e54c9cf448dd919f2c459ea72d12a838d4e3036030fb7d6c6",
};

describe("README test vectors", () => {
  it("are what the ledger computes for the example event", async () => {
    const pii = await piiCommitment(EXAMPLE.salt, EXAMPLE.pii);
    expect(pii).toBe(EXPECTED.pii);
    const payload = canonicalPayload(EXAMPLE.fields, pii);
    expect(payload).toBe(EXPECTED.payload);
    expect(await chainHash(EXAMPLE.prevHash, payload)).toBe(EXPECTED.hash);
    expect(await sign(await loadKeyring(EXAMPLE.key), payload)).toBe(EXPECTED.signature);
  });

  it("still hold after erasure: the stored commitment stands in for the erased data", async () => {
    const erased = { actor_id: null, actor_name: null, actor_email: null, ip_address: null, user_agent: null };
    expect(await rowCommitment({ ...erased, pii_salt: null, pii_commitment: EXPECTED.pii })).toBe(EXPECTED.pii);
  });

  it("are printed in the API reference (src/docs/api.md) exactly", () => {
    const start = readme.indexOf("## Canonical payload, hash and signature");
    expect(start).toBeGreaterThan(0);
    const section = readme.slice(start);
    for (const value of [EXAMPLE.salt, EXAMPLE.prevHash, EXAMPLE.key, EXPECTED.piiJcs, EXPECTED.pii, EXPECTED.payload, EXPECTED.hash, EXPECTED.signature]) {
      expect(section).toContain(value);
    }
  });
});
