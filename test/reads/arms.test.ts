import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { dropPeriod, makePeriod } from "../../src/model/periods";
import { EXPORT_BATCH, exportTuning } from "../../src/reads/export-stream";
import { BASE, call, createProject, expectEveryListing, ingestMany, listOrder, listPages, moveIntoPeriod, pastArm } from "../helpers";

/** GET /v1/exports' events, in the order it wrote them. */
async function exported(key: string, query: string): Promise<number[]> {
  const res = await exports.default.fetch(new Request(`${BASE}/v1/exports?format=json${query}`, { headers: { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "10.9.9.9" } }));
  expect(res.status).toBe(200);
  return (JSON.parse(await res.text()) as Array<{ seq: number }>).map((e) => e.seq);
}

describe("reads over arms: each page from the arms that can hold it", () => {
  it("lists, searches and gets a project's events in past periods and the main tables as from one table", async () => {
    const p = await createProject();
    // Periods long past, so settled: no row can land in them.
    const older = pastArm();
    const [newer, empty] = [older + 100, older + 200];
    for (const n of [older, newer, empty]) await makePeriod(p.db, n);
    try {
      const input = (i: number, month: number | null) => ({
        action: i % 3 === 0 ? "doc.read" : "doc.write",
        actor: { id: `u${i % 4}`, name: `Member ${i + 1}` },
        targets: [{ type: i % 2 ? "doc" : "folder", id: `t${i}` }],
        // Backdated into January and June; the last twelve happen when received.
        ...(month === null ? {} : { occurred_at: new Date(Date.UTC(2026, month, 1 + (i % 12), 10, i)).toISOString() }),
      });
      const sent: Array<{ seq: number; occurred_at: string; id: string; action: string; actor: string; type: string }> = [];
      const send = async (from: number, month: number | null) => {
        const events = Array.from({ length: 12 }, (_, k) => input(from + k, month));
        const stored = await ingestMany(p.key, events);
        stored.forEach((e, k) => sent.push({ seq: e.seq, occurred_at: e.occurred_at, id: e.id, action: events[k].action, actor: events[k].actor.id, type: events[k].targets[0].type }));
        return stored[0].seq - 1;
      };
      // Written by the commit's own statements into each period, as the ledger writes them.
      expect(await moveIntoPeriod(p.db, p.id, older, await send(0, 0))).toBe(12);
      expect(await moveIntoPeriod(p.db, p.id, newer, await send(12, 5))).toBe(12);
      await send(24, null);

      await expectEveryListing(p.key, sent, [
        ["", () => true],
        ["action=doc.read", (e) => e.action === "doc.read"],
        ["actor_id=u2", (e) => e.actor === "u2"],
        ["target_type=doc", (e) => e.type === "doc"],
        ["date_from=2026-05-01T00:00:00Z", (e) => e.occurred_at >= "2026-05-01"],
      ]);
      expect(await listPages(p.key, "/v1/events/search", "q=member", 5)).toEqual(listOrder(sent, () => true));
      expect(await listPages(p.key, "/v1/events/search", "q=member%2017", 2)).toEqual([sent[16].seq]);
      expect(await listPages(p.key, "/v1/events/search", "q=member%2011", 2)).toEqual([sent[10].seq]);
      expect(await listPages(p.key, "/v1/events/search", "q=member%2029", 2)).toEqual([sent[28].seq]);
      for (const e of [sent[2], sent[14], sent[30]]) {
        const got = await call("GET", `/v1/events/${e.id}`, { key: p.key });
        expect(got.status, got.text).toBe(200);
        expect(got.json.data.seq).toBe(e.seq);
      }
      // Exports page by the same spans: pages of 5, so pages end inside each arm and across them.
      exportTuning.batch = 5;
      try {
        expect(await exported(p.key, "")).toEqual(listOrder(sent, () => true));
        expect(await exported(p.key, "&actor_id=u2")).toEqual(listOrder(sent, (e) => e.actor === "u2"));
        expect(await exported(p.key, "&date_to=2026-05-01T00:00:00Z")).toEqual(listOrder(sent, (e) => e.occurred_at <= "2026-05-01"));
      } finally {
        exportTuning.batch = EXPORT_BATCH;
      }
    } finally {
      for (const n of [older, newer, empty]) await dropPeriod(p.db, n);
    }
  });
});
