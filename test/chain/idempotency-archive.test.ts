import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import { call, createProject, ingest } from "../helpers";

/** Tiering at 0 days, then the cron's archive step until nothing is hot. */
async function archiveEverything(projectId: string) {
  await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(projectId).run();
  const ledger = ledgerOf(env, projectId);
  for (let i = 0; i < 20; i++) if ((await ledger.archiveSegment(new Date().toISOString(), { segmentRows: 3 })).done) return;
  throw new Error("archiving did not finish");
}

describe("Idempotency-Key replays across the archive", () => {
  it("a retry whose events were archived meanwhile answers with the same events, in order, and appends nothing", async () => {
    const p = await createProject();
    const headers = { "Idempotency-Key": "import-7" };
    const body = { events: Array.from({ length: 5 }, (_, i) => ({ action: "invoice.imported", metadata: { i } })) };
    const first = await call("POST", "/v1/events/batch", { key: p.key, body, headers });
    expect(first.status).toBe(201);
    // Another event after the batch, so the batch's segments are not the only ones.
    await ingest(p.key, { action: "later" });
    await archiveEverything(p.id);
    expect((await p.db.prepare("SELECT count(*) AS n FROM events WHERE project_id = ?").bind(p.id).first<{ n: number }>())!.n).toBe(0);

    const retry = await call("POST", "/v1/events/batch", { key: p.key, body, headers });
    expect(retry.status).toBe(201);
    expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
    expect(retry.json.data).toEqual(first.json.data);

    const single = await ingest(p.key, { action: "one" }, { headers: { "Idempotency-Key": "single-1" } });
    await archiveEverything(p.id);
    const again = await ingest(p.key, { action: "one" }, { headers: { "Idempotency-Key": "single-1" } });
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
    expect(again.json.data).toEqual(single.json.data);
    // A different body under an archived key is still refused.
    expect((await ingest(p.key, { action: "two" }, { headers: { "Idempotency-Key": "single-1" } })).status).toBe(422);
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 7 });
  });

  it("replays only the project's own events, never another project's archived ones", async () => {
    const a = await createProject();
    const b = await createProject();
    const headers = { "Idempotency-Key": "shared-key" };
    const fromA = await ingest(a.key, { action: "a.thing" }, { headers });
    await archiveEverything(a.id);
    const fromB = await ingest(b.key, { action: "a.thing" }, { headers });
    expect(fromB.headers.get("Idempotent-Replayed")).toBeNull();
    expect(fromB.json.data.id).not.toBe(fromA.json.data.id);
  });
});
