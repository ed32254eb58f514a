import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { meterReport, resetMeterReport } from "../../src/lib/meter";
import { EXPORT_BATCH, exportTuning } from "../../src/reads/export-stream";
import { call, createProject, ingestMany, warmKey } from "../helpers";
import { archiveAll, segmentsOf } from "../storage/archive-helpers";

const events = (n: number) => Array.from({ length: n }, (_, i) => ({ action: `doc.${i % 3}`, actor: { id: `u_${i % 4}` }, metadata: { i } }));

async function staged(projectId: string) {
  return (await env.EXPORTS.list({ prefix: `exports/${projectId}/` })).objects.length;
}

/** One export's body and what its request and its parts used, from a fresh meter report. */
async function metered(key: string, query: string) {
  await warmKey(key);
  resetMeterReport();
  const res = await call("GET", `/v1/exports?${query}`, { key });
  expect(res.status).toBe(200);
  const rows = meterReport();
  return { text: res.text, request: rows.find((r) => r.invocation === "GET /v1/exports")!, parts: rows.filter((r) => r.invocation.startsWith("ExportPart.")) };
}

afterEach(() => {
  exportTuning.batch = EXPORT_BATCH;
  exportTuning.pages = 10;
});

describe("GET /v1/exports in parts", () => {
  it("reads every page in ExportPart invocations: the request's own D1 queries do not grow with the export", async () => {
    const small = await createProject();
    await ingestMany(small.key, events(5));
    const large = await createProject();
    await ingestMany(large.key, events(25));
    const whole = { csv: (await call("GET", "/v1/exports?format=csv", { key: large.key })).text, json: (await call("GET", "/v1/exports?format=json", { key: large.key })).text };

    // Batches of 10 rows, one per part: 5 events are one part, 25 are three.
    exportTuning.batch = 10;
    exportTuning.pages = 1;
    for (const format of ["csv", "json"] as const) {
      const one = await metered(small.key, `format=${format}`);
      const before = await staged(large.id);
      const three = await metered(large.key, `format=${format}`);
      expect(await staged(large.id) - before, format).toBe(3);
      // The same bytes as one default-sized part.
      expect(three.text, format).toBe(whole[format]);
      expect(three.request, format).toBeDefined();
      expect(three.request.d1Queries, format).toBe(one.request.d1Queries);
      // The request only coordinates: one subrequest (a Durable Object call) per part.
      expect(three.request.subrequests - one.request.subrequests, format).toBe(2);
      expect(three.parts.length, format).toBeGreaterThan(0);
      expect(three.parts.some((r) => r.d1Queries > 0), format).toBe(true);
    }
  }, 60_000);
});

describe("GET /v1/exports in parts, archived", () => {
  it("gives the same bytes in small parts as in one, hot and archived, whole and filtered, staged objects included", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(70));
    // Every event so far archived in segments of 20; ten more stay hot.
    await archiveAll(p.id, 20);
    await ingestMany(p.key, events(10));
    expect((await segmentsOf(p.db, p.id)).length).toBeGreaterThan(0);
    const queries = ["format=csv", "format=json", "format=csv&actor_id=u_1", "format=json&actions_exclude=doc.1", "format=json&actor_id=nobody"];
    const whole = new Map<string, string>();
    for (const q of queries) whole.set(q, (await call("GET", `/v1/exports?${q}`, { key: p.key })).text);
    // Batches of 7 rows, two per part: parts end inside segments and between them.
    exportTuning.batch = 7;
    exportTuning.pages = 2;
    for (const q of queries) {
      const before = new Set((await env.EXPORTS.list({ prefix: `exports/${p.id}/` })).objects.map((o) => o.key));
      const res = await call("GET", `/v1/exports?${q}`, { key: p.key });
      expect(res.text, q).toBe(whole.get(q));
      // What was staged, read back in order, is what was streamed; unfiltered, the archive's pre-rendered companions are not staged.
      const fresh = (await env.EXPORTS.list({ prefix: `exports/${p.id}/` })).objects.filter((o) => !before.has(o.key)).sort((x, y) => (x.key < y.key ? -1 : 1));
      expect(fresh.length, q).toBeGreaterThan(0);
      const stagedText = (await Promise.all(fresh.map(async (o) => (await env.EXPORTS.get(o.key))!.text()))).join("");
      if (q.includes("actor_id") || q.includes("exclude")) expect(stagedText, q).toBe(res.text);
      else {
        expect(stagedText.length, q).toBeLessThan(res.text.length);
        expect(res.text.startsWith(stagedText), q).toBe(true);
      }
    }
  }, 60_000);
});
