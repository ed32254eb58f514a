import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { loadKeyring } from "../../src/sealing/signing-keys";
import { verifyChain, type VerifyWindow } from "../../src/chain/verify";
import { appendRows, K1, K2, newProject, fixtureAnchor } from "./verify-fixtures";

const OPEN: VerifyWindow = { from: null, to: null };

async function verifyWith(keys: string, projectId: string, window = OPEN, pageSize = 2) {
  // These fixtures write rows and the D1 head directly, with no ledger behind them.
  return verifyChain(env.DB, await loadKeyring(keys), projectId, window, fixtureAnchor(projectId), pageSize);
}

describe("verifyChain across D1 pages", () => {
  it("walks every page and stops at the first bad row, wherever the page breaks", async () => {
    const p = await newProject();
    const rows = await appendRows(p, K1, Array.from({ length: 7 }, () => ({})));
    expect(await verifyWith(K1, p)).toEqual({ ok: true, verified: 7, anonymized: 0, unsigned: 0, restored_surrogates: 0, gaps: [], failure: null, checkpoint: { tree_size: 0, root_hash: "" } });
    await env.DB.prepare("UPDATE events SET action = 'x' WHERE id = ?").bind(rows[4].id).run();
    await env.DB.prepare("UPDATE events SET action = 'y' WHERE id = ?").bind(rows[6].id).run();
    expect(await verifyWith(K1, p)).toMatchObject({
      ok: false,
      verified: 4,
      failure: { event_id: rows[4].id, reason: "hash_mismatch", at: rows[4].occurred_at },
    });
  });

  it("links windowed rows to predecessors outside the window, on every page", async () => {
    const p = await newProject();
    const inside = "2026-02-01T00:00:00.000Z";
    const outside = "2025-01-01T00:00:00.000Z";
    const rows = await appendRows(p, K1, Array.from({ length: 9 }, (_, i) => ({ occurred_at: i % 2 ? outside : inside })));
    const window = { from: "2026-01-01T00:00:00.000Z", to: null };
    expect(await verifyWith(K1, p, window)).toMatchObject({ ok: true, verified: 5 });
    // Row 6 (outside) gets a new hash: row 7 (inside) no longer links to it.
    await env.DB.prepare("UPDATE events SET hash = ? WHERE id = ?").bind("a".repeat(64), rows[5].id).run();
    expect((await verifyWith(K1, p, window)).failure).toEqual({ event_id: rows[6].id, reason: "chain_broken", at: inside });
  });
});

describe("verifyChain with rotated signing keys", () => {
  async function rotatedProject() {
    const p = await newProject();
    const old = await appendRows(p, K1, [{}, {}, {}]);
    const rotated = await appendRows(p, `${K1},${K2}`, [{}, {}, {}]);
    return { p, rows: [...old, ...rotated] };
  }

  it("checks each signature with the key its version names", async () => {
    const { p, rows } = await rotatedProject();
    expect(rows.map((r) => r.signature!.slice(0, 2))).toEqual(["v1", "v1", "v1", "v2", "v2", "v2"]);
    expect(await verifyWith(`${K1},${K2}`, p)).toMatchObject({ ok: true, verified: 6 });
  });

  it("fails a signature whose version the keyring does not hold", async () => {
    const { p, rows } = await rotatedProject();
    expect((await verifyWith(K1, p)).failure).toMatchObject({ event_id: rows[3].id, reason: "signature_mismatch" });
    expect((await verifyWith(K2, p)).failure).toMatchObject({ event_id: rows[0].id, reason: "signature_mismatch" });
  });

  it("fails a signature when its version's secret changed", async () => {
    const { p, rows } = await rotatedProject();
    const failure = (await verifyWith(`${K1},2:a-different-secret-for-two`, p)).failure;
    expect(failure).toMatchObject({ event_id: rows[3].id, reason: "signature_mismatch" });
  });

  it("counts rows before the ledger's signed-from seq as unsigned, and demands signatures from it on", async () => {
    const p = await newProject();
    const rows = await appendRows(p, K1, Array.from({ length: 5 }, () => ({})));
    // An imported history whose first two rows predate signing.
    await env.DB.prepare("UPDATE events SET signature = NULL WHERE project_id = ? AND seq <= 2").bind(p).run();
    const ring = await loadKeyring(K1);
    expect(await verifyChain(env.DB, ring, p, OPEN, fixtureAnchor(p, 3))).toMatchObject({ ok: true, verified: 3, unsigned: 2 });
    expect((await verifyChain(env.DB, ring, p, OPEN, fixtureAnchor(p, 1))).failure).toMatchObject({
      event_id: rows[0].id,
      reason: "signature_mismatch",
    });
  });
});
