import { env } from "cloudflare:workers";
import { introspectWorkflow } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { call, createProject, ingestMany } from "../helpers";
import { eraseApplied } from "../chain/erasure-helpers";
import { archiveAll, segmentsOf } from "../storage/archive-helpers";
import { getBytes, jobBytes, text, waitForJob } from "./job-helpers";

const at = (i: number) => new Date(Date.UTC(2026, 0, 1) + Math.floor(i / 3) * 60_000).toISOString();
const events = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    action: `doc.${i % 3}`,
    ...(i % 4 === 0 ? {} : { organization: `org_${i % 2}` }),
    actor: { id: `u_${i % 4}`, name: i % 6 === 0 ? 'Quote "me", ok;\nnext' : `Ünïcode ${i} ✓` },
    metadata: { i },
    occurred_at: at(i),
  }));

async function sha256(bytes: Uint8Array) {
  return [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");
}

describe("export jobs", () => {
  it("write files that concatenate to exactly GET /v1/exports' body, hot and archived, whole and filtered", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(400));
    // Seqs 1-240 archived in segments of 80; 241-400 stay hot.
    await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(p.id).run();
    await archiveAll(p.id, 80);
    await ingestMany(p.key, events(10).map((e, i) => ({ ...e, occurred_at: at(400 + i) })));
    expect((await segmentsOf(p.db, p.id)).length).toBeGreaterThan(0);
    const cases: Array<Record<string, unknown>> = [
      { format: "csv" },
      { format: "json" },
      { format: "csv", actor_id: "u_1" },
      { format: "json", actions_exclude: "doc.1", organization: "org_0" },
      { format: "csv", date_from: at(100), date_to: at(300) },
      { format: "json", actions: "doc.0,doc.2", date_from: at(30) },
      { format: "json", action: "nothing.matches" },
    ];
    for (const filters of cases) {
      const query = new URLSearchParams(filters as Record<string, string>).toString();
      const expected = await getBytes(p.key, `/v1/exports?${query}`);
      expect(expected.status).toBe(200);
      const created = await call("POST", "/v1/jobs", { key: p.key, body: { type: "export", ...filters, part_rows: 100 } });
      expect(created.status, query).toBe(202);
      expect(created.json.data.status).toBe("queued");
      const job = await waitForJob(p.key, created.json.data.id);
      expect(job.status, query).toBe("succeeded");
      const bytes = await jobBytes(p.key, job);
      expect(text(bytes), query).toBe(text(expected.bytes));
      const rows = job.files.reduce((n: number, f: { rows: number }) => n + f.rows, 0);
      expect(job.progress, query).toEqual({ done: rows, total: rows });
      for (const f of job.files) {
        expect(f.rows, query).toBeLessThanOrEqual(100);
        expect(f.sha256).toBe(await sha256((await getBytes(p.key, f.url)).bytes));
      }
      if (filters.format === "json") expect(JSON.parse(text(bytes)).length, query).toBe(rows);
    }
  });

  it("shows progress between 0 and total, and a step that fails once is retried without losing or repeating rows", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(500));
    await using workflows = await introspectWorkflow(env.JOBS);
    await workflows.modifyAll(async (m) => {
      await m.mockStepError({ name: "part-2" }, new Error("injected crash"), 1);
    });
    const created = await call("POST", "/v1/jobs", { key: p.key, body: { type: "export", format: "csv", part_rows: 100 } });
    const seen: Array<{ done: number; total: number; status: string }> = [];
    const job = await waitForJob(p.key, created.json.data.id, seen);
    expect(job.status).toBe("succeeded");
    expect(seen.some((s) => s.status === "running" && s.done > 0 && s.done < s.total && s.total === 500)).toBe(true);
    const expected = await getBytes(p.key, "/v1/exports?format=csv");
    expect(text(await jobBytes(p.key, job))).toBe(text(expected.bytes));
    expect(job.files.map((f: { name: string }) => f.name)).toEqual(["part-000001.csv", "part-000002.csv", "part-000003.csv", "part-000004.csv", "part-000005.csv"]);
  });
});

describe("export jobs and erasure", () => {
  it("erasing an actor deletes every job file of the project at once: none may keep the erased values in clear", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(60));
    const created = await call("POST", "/v1/jobs", { key: p.key, body: { type: "export", format: "csv", part_rows: 20 } });
    const job = await waitForJob(p.key, created.json.data.id);
    expect(job.status).toBe("succeeded");
    expect(text(await jobBytes(p.key, job))).toContain("Ünïcode 1 ✓");
    expect((await env.EXPORTS.list({ prefix: `jobs/${p.id}/` })).objects.length).toBe(job.files.length);

    expect((await eraseApplied(p.key, "/v1/actors/u_1")).status).toBe(202);
    expect((await env.EXPORTS.list({ prefix: `jobs/${p.id}/` })).objects).toEqual([]);
    const after = (await call("GET", `/v1/jobs/${job.id}`, { key: p.key })).json.data;
    expect(after).toMatchObject({ status: "succeeded", files: [], files_expired: true });
    expect((await call("GET", job.files[0].url, { key: p.key })).status).toBe(404);
  }, 30_000);
});

describe("export jobs of very large projects", () => {
  it("write several parts a step once one a step would pass MAX_PART_STEPS steps, each recorded as it goes", async () => {
    const { exportParts, planExport, MAX_PART_STEPS } = await import("../../src/jobs/export-job");
    const { getJob, insertJob } = await import("../../src/jobs/job-store");
    const p = await createProject();
    await ingestMany(p.key, events(60));
    const id = crypto.randomUUID();
    await insertJob(env, p.id, id, "export", { format: "json", part_rows: 10, filters: {}, selection: { projectId: p.id, organization: null, actorId: null, ipAddress: null, dateFrom: null, dateTo: null, actions: null, exclude: [] } });
    await planExport(env, p.id, id);
    expect((await exportParts(env, p.id, id)).last).toBe(false);
    expect((await getJob(env, p.id, id))!.files).toHaveLength(1);
    // As if the project held 3 x MAX_PART_STEPS parts of rows: three parts a step.
    await p.db.prepare("UPDATE jobs SET progress_total = ? WHERE id = ?").bind(3 * MAX_PART_STEPS * 10, id).run();
    await exportParts(env, p.id, id);
    const job = (await getJob(env, p.id, id))!;
    expect(job.files.map((f) => f.rows)).toEqual([10, 10, 10, 10]);
    expect(job.done).toBe(40);
  });
});
