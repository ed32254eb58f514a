import { describe, expect, it } from "vitest";
import { meterReport, resetMeterReport } from "../../src/lib/meter";
import { element, actionPrefixElement, rowElements } from "../../src/storage/archive-summary";
import { createProject, ingestMany } from "../helpers";
import { archiveAll, segmentsOf } from "../storage/archive-helpers";
import { ago, archivedSeqs, batch, plan, purgeSteps, verify } from "../storage/retention-helpers";

/** Ten archived segments of four events; only the fifth holds debug events (without summaries, the first call reads four others before it). */
async function project() {
  const p = await createProject();
  for (let s = 0; s < 10; s++) await ingestMany(p.key, batch(4, s === 4 ? "debug.sql" : "doc.read", ago(30)));
  await archiveAll(p.id, 4);
  expect((await segmentsOf(p.db, p.id)).length).toBe(10);
  return p;
}

/** The purge's busiest ledger call: how many R2 reads (subrequests) one step made at most. */
async function purgeMetered(projectId: string) {
  resetMeterReport();
  const result = await purgeSteps(projectId);
  const worst = meterReport().find((r) => r.invocation === "ProjectLedger.purgeExpired");
  expect(worst, JSON.stringify(meterReport())).toBeDefined();
  return { ...result, subrequests: worst!.subrequests };
}

describe("retention reads only the segments whose summaries hold an action a rule could expire", () => {
  it("summarises actions by their prefixes, as rules name them", () => {
    const elements = rowElements({ organization: null, actor_id: null, actor_email: null, actor_name: null, ip_address: null, action: "debug.sql", targets: "[]" });
    for (const prefix of ["d", "debug", "debug.", "debug.sql"]) expect(elements.has(actionPrefixElement(prefix))).toBe(true);
    expect(elements.has(element("action", "debug.sql"))).toBe(true);
    expect(elements.has(actionPrefixElement("doc"))).toBe(false);
  });

  it("purges a debug.* rule's events from the one segment holding them, without reading the other nine", async () => {
    const p = await project();
    await plan(p.key, [{ pattern: "debug.*", days: 7 }]);
    const withSummaries = await purgeMetered(p.id);
    expect(withSummaries.purged).toBe(4);
    expect(await archivedSeqs(p.db, p.id)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1).filter((s) => s < 17 || s > 20));
    expect(await verify(p.key)).toMatchObject({ ok: true, gaps: [{ first_seq: 17, last_seq: 20, purged_count: 4 }] });

    // The same project without summaries (sealed before them): the purge reads five segments a call.
    const q = await project();
    await q.db.prepare("DELETE FROM archive_summaries WHERE project_id = ?").bind(q.id).run();
    await plan(q.key, [{ pattern: "debug.*", days: 7 }]);
    const without = await purgeMetered(q.id);
    expect(without.purged).toBe(4);
    // The call that retires it read it alone, against five segments: four R2 reads fewer.
    expect(without.subrequests - withSummaries.subrequests).toBe(4);
    // A rule for every action must look at every old segment: its summary cannot rule any out.
    const r = await project();
    await plan(r.key, [{ pattern: "*", days: 7 }]);
    expect((await purgeSteps(r.id)).purged).toBe(40);
    expect(await segmentsOf(r.db, r.id)).toEqual([]);
  });
});
