import { describe, expect, it } from "vitest";
import { base64Decode, base64Encode } from "../../src/tlog/encoding";
import { parsePublicKeys, verifyReceipt, verifyTlogEntry } from "../../src/scripts/receipt-check.mjs";
import { call, createProject, ingestMany } from "../helpers";
import { forgetLog } from "../log/ledger-log";

async function receiptOf(key: string, id: string) {
  return (await call("GET", `/v1/events/${id}/receipt`, { key })).json.data;
}

const publishedKeys = async () => parsePublicKeys((await call("GET", "/.well-known/witness-keys.json")).text);

/** Flips one bit of the first proof hash (or of the checkpoint's root line) of a tlog-proof text. */
function tamperLine(proof: string, lineIndex: number): string {
  const lines = proof.split("\n");
  const bytes = base64Decode(lines[lineIndex]);
  bytes[0] ^= 1;
  lines[lineIndex] = base64Encode(bytes);
  return lines.join("\n");
}

describe("receipts carry the event's transparency log proof", () => {
  it("verifies offline against the published keys, covered by the receipt's signature", async () => {
    const p = await createProject();
    const events = await ingestMany(p.key, Array.from({ length: 6 }, (_, i) => ({ action: `r.${i}` })));
    const keys = await publishedKeys();
    const log = (await call("GET", "/v1/log", { key: p.key })).json.data;
    for (const e of events) {
      const receipt = await receiptOf(p.key, e.id);
      const result = await verifyReceipt(receipt, keys);
      expect(result).toEqual({ ok: true, kid: "test-2", tlog: { ok: true, origin: log.origin, index: e.seq - 1, tree_size: 6, kid: "test-2" } });
    }
  });

  it("fails once a hash in the proof is changed, whether or not the receipt is re-signed", async () => {
    const p = await createProject();
    const events = await ingestMany(p.key, Array.from({ length: 5 }, (_, i) => ({ action: `s.${i}` })));
    const receipt = await receiptOf(p.key, events[2].id);
    const keys = await publishedKeys();
    // Inside a signed receipt, any edit breaks the receipt's own proof.
    const proofLine = 2; // header, index, then the first proof hash
    const edited = { ...receipt, tlog_proof: tamperLine(receipt.tlog_proof, proofLine) };
    expect(await verifyReceipt(edited, keys)).toMatchObject({ ok: false });
    // The tlog proof is checked on its own too: a changed proof hash, root, or leaf fails.
    expect(await verifyTlogEntry(receipt, keys)).toMatchObject({ ok: true, index: 2 });
    expect(await verifyTlogEntry(edited, keys)).toMatchObject({ ok: false, reason: expect.stringContaining("inclusion proof") });
    const lines = receipt.tlog_proof.split("\n");
    const rootLine = lines.indexOf("") + 3; // blank line, origin, size, root
    expect(await verifyTlogEntry({ ...receipt, tlog_proof: tamperLine(receipt.tlog_proof, rootLine) }, keys)).toMatchObject({ ok: false });
    expect(await verifyTlogEntry({ ...receipt, hash: events[1].hash }, keys)).toMatchObject({ ok: false });
    expect(await verifyTlogEntry({ ...receipt, seq: 2 }, keys)).toMatchObject({ ok: false, reason: expect.stringContaining("leaf 2") });
    // Keys other than the log's: nothing verifies.
    expect(await verifyTlogEntry(receipt, [keys[0]])).toMatchObject({ ok: false });
  });

  it("is null while the project's log is being built, and the receipt still verifies", async () => {
    const p = await createProject();
    const events = await ingestMany(p.key, [{ action: "t.1" }, { action: "t.2" }]);
    await forgetLog(p.id);
    const receipt = await receiptOf(p.key, events[0].id);
    expect(receipt.tlog_proof).toBeNull();
    expect(await verifyReceipt(receipt, await publishedKeys())).toEqual({ ok: true, kid: "test-2" });
  });
});
