/** GET /v1/events/:id/proof for events in the cold archive (issue #26, item 9). */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import { hexDecode } from "../../src/tlog/encoding";
import { verifyTlogProof } from "../../src/tlog/tlog-proof";
import { call, createProject, ingestMany } from "../helpers";

async function archiveAll(projectId: string, rows: number) {
  await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(projectId).run();
  const ledger = ledgerOf(env, projectId);
  for (let i = 0; i < 100; i++) if ((await ledger.archiveSegment(new Date().toISOString(), { segmentRows: rows })).done) return;
  throw new Error("archiving did not finish");
}

describe("inclusion proofs of archived events", () => {
  it("are served as for hot ones, and verify against the checkpoint", async () => {
    const p = await createProject();
    const events = await ingestMany(p.key, Array.from({ length: 120 }, (_, i) => ({ action: `cold.${i}` })));
    await archiveAll(p.id, 50);
    const hot = await p.db.prepare("SELECT count(*) AS n FROM events WHERE project_id = ?").bind(p.id).first<{ n: number }>();
    expect(hot!.n).toBe(0);
    const fresh = (await ingestMany(p.key, [{ action: "hot.1" }]))[0];
    const { vkey } = (await call("GET", "/v1/log", { key: p.key })).json.data;
    for (const e of [events[0], events[77], events[119], fresh]) {
      const res = await call("GET", `/v1/events/${e.id}/proof`, { key: p.key });
      expect(res.status, e.id).toBe(200);
      expect(res.json.data).toMatchObject({ index: e.seq - 1, tree_size: 121 });
      expect((await verifyTlogProof(res.json.data.proof, { leafData: hexDecode(e.hash) }, vkey)).ok).toBe(true);
    }
  });

  it("stay within the key's project: another project's archived event is 404", async () => {
    const a = await createProject();
    const b = await createProject();
    const [archived] = await ingestMany(b.key, [{ action: "b.cold" }]);
    await archiveAll(b.id, 50);
    expect((await call("GET", `/v1/events/${archived.id}/proof`, { key: b.key })).status).toBe(200);
    const res = await call("GET", `/v1/events/${archived.id}/proof`, { key: a.key });
    expect(res.status).toBe(404);
    expect(res.json.error.code).toBe("NOT_FOUND");
  });

  it("answer 410 ARCHIVE_DAMAGED, not a retryable 500, when the event's segment is gone", async () => {
    const p = await createProject();
    const [first] = await ingestMany(p.key, [{ action: "gone.1" }, { action: "gone.2" }]);
    await archiveAll(p.id, 50);
    const { objects } = await env.ARCHIVE.list({ prefix: `archive/${p.id}/` });
    expect(objects.length).toBeGreaterThan(0);
    for (const o of objects) await env.ARCHIVE.delete(o.key);
    const res = await call("GET", `/v1/events/${first.id}/proof`, { key: p.key });
    expect(res.status).toBe(410);
    expect(res.json.error.code).toBe("ARCHIVE_DAMAGED");
  });
});
