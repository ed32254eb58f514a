import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { purgeExpiredEvents } from "../../src/chain/retention";
import { call, createProject, ingestMany } from "../helpers";
import { archiveAll, segmentsOf } from "./archive-helpers";

describe("verify's walk over both tiers", () => {
  it("walks a segment retention rewrote with holes, between two archived segments, as one chain", async () => {
    const p = await createProject();
    const old = new Date(Date.now() - 10 * 86_400_000).toISOString();
    const ev = (action: string) => ({ action, actor: { id: "u" }, occurred_at: old });
    await ingestMany(p.key, [
      ...Array.from({ length: 5 }, () => ev("doc.read")),
      ev("debug.x"), ev("doc.read"), ev("debug.x"), ev("debug.x"), ev("doc.read"),
      ...Array.from({ length: 5 }, () => ev("doc.read")),
    ]);
    await archiveAll(p.id, 5);
    expect((await call("PUT", "/v1/retention", { key: p.key, body: { rules: [{ pattern: "debug.*", days: 5 }] } })).status).toBe(200);
    await purgeExpiredEvents(env, new Date());
    // Segment 6-10 is rewritten in place with 7 and 10 only; 1-5 and 11-15 are left as they were; 16 (the plan's record) is hot.
    expect((await segmentsOf(p.db, p.id)).map((s) => [s.first_seq, s.last_seq, s.count])).toEqual([[1, 5, 5], [6, 10, 2], [11, 15, 5]]);
    const verify = (await call("GET", "/v1/events/verify", { key: p.key })).json.data;
    expect(verify).toMatchObject({ ok: true, failure: null, verified: 13, gaps: [{ first_seq: 6, last_seq: 6 }, { first_seq: 8, last_seq: 9 }] });
  });
});
