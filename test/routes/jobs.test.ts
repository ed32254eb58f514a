import { env } from "cloudflare:workers";
import { introspectWorkflow } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { jobPrefix, sweepExpiredJobFiles } from "../../src/jobs/job-files";
import { call, createProject, createScopedKey, ingestMany } from "../helpers";
import { getBytes, text, waitForJob } from "../jobs/job-helpers";

const events = (n: number) => Array.from({ length: n }, (_, i) => ({ action: `doc.${i % 3}`, actor: { id: `u_${i % 4}` }, metadata: { i } }));

async function exportJob(key: string, body: Record<string, unknown> = {}) {
  const created = await call("POST", "/v1/jobs", { key, body: { type: "export", format: "csv", ...body } });
  expect(created.status).toBe(202);
  return waitForJob(key, created.json.data.id);
}

const objectsOf = async (projectId: string, id: string) => (await env.EXPORTS.list({ prefix: jobPrefix(projectId, id) })).objects.length;

describe("jobs API", () => {
  it("refuses bad types and filters with 400, and unknown or another project's jobs with 404", async () => {
    const p = await createProject();
    const other = await createProject();
    const bad = [
      { type: "reindex" },
      {},
      { type: "export", format: "xml" },
      { type: "export", format: "csv", date_from: "yesterday" },
      { type: "export", format: "csv", date_from: "2026-02-01T00:00:00Z", date_to: "2026-01-01T00:00:00Z" },
      { type: "export", format: "csv", colour: "red" },
      { type: "export", format: "csv", part_rows: 9 },
      { type: "verify", from: "soon" },
    ];
    for (const body of bad) {
      const res = await call("POST", "/v1/jobs", { key: p.key, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.error.code).toBe("VALIDATION_ERROR");
    }
    const job = await exportJob(other.key);
    for (const [method, path] of [["GET", `/v1/jobs/${job.id}`], ["DELETE", `/v1/jobs/${job.id}`], ["GET", `/v1/jobs/${job.id}/files/part-000001.csv`], ["GET", "/v1/jobs/nope"]]) {
      const res = await call(method, path, { key: p.key });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.json.error.code).toBe("NOT_FOUND");
    }
    expect((await call("GET", `/v1/jobs/${job.id}/files/part-000009.csv`, { key: other.key })).status).toBe(404);
    // Read scope: an ingest-only key may not start or read jobs.
    const ingestOnly = await createScopedKey(p.id, ["ingest"]);
    expect((await call("POST", "/v1/jobs", { key: ingestOnly.key, body: { type: "verify" } })).status).toBe(403);
    expect((await call("GET", "/v1/jobs", { key: ingestOnly.key })).status).toBe(403);
  });

  it("lists the project's jobs newest first with a cursor", async () => {
    const p = await createProject();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await exportJob(p.key)).id);
    const first = await call("GET", "/v1/jobs?limit=2", { key: p.key });
    expect(first.status).toBe(200);
    expect(first.json.data.map((j: { id: string }) => j.id)).toEqual([ids[2], ids[1]]);
    const second = await call("GET", `/v1/jobs?limit=2&cursor=${first.json.nextCursor}`, { key: p.key });
    expect(second.json.data.map((j: { id: string }) => j.id)).toEqual([ids[0]]);
    expect(second.json.nextCursor).toBeNull();
    expect((await call("GET", "/v1/jobs?cursor=%%%", { key: p.key })).status).toBe(400);
  });

  it("serves byte ranges with 206 and Content-Range, and 416 outside the file", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(30));
    const job = await exportJob(p.key);
    const file = job.files[0];
    const whole = await getBytes(p.key, file.url);
    expect(whole.status).toBe(200);
    expect(whole.headers.get("Accept-Ranges")).toBe("bytes");
    const size = whole.bytes.length;
    for (const [range, from, to] of [["bytes=0-9", 0, 9], ["bytes=10-", 10, size - 1], ["bytes=-7", size - 7, size - 1], [`bytes=5-${size + 100}`, 5, size - 1]] as const) {
      const res = await getBytes(p.key, file.url, { Range: range });
      expect(res.status, range).toBe(206);
      expect(res.headers.get("Content-Range"), range).toBe(`bytes ${from}-${to}/${size}`);
      expect(text(res.bytes), range).toBe(text(whole.bytes.slice(from, to + 1)));
    }
    const out = await call("GET", file.url, { key: p.key, headers: { Range: `bytes=${size}-` } });
    expect(out.status).toBe(416);
    expect(out.json.error.code).toBe("RANGE_NOT_SATISFIABLE");
    expect(out.headers.get("Content-Range")).toBe(`bytes */${size}`);
  });

  it("cancels a running job: it stops, says canceled, and its files are gone", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(400));
    await using workflows = await introspectWorkflow(env.JOBS);
    // The third part fails once: the job waits for its retry, running, with two files written.
    await workflows.modifyAll(async (m) => {
      await m.mockStepError({ name: "part-2" }, new Error("injected"), 1);
    });
    const created = await call("POST", "/v1/jobs", { key: p.key, body: { type: "export", format: "json", part_rows: 100 } });
    const id = created.json.data.id;
    for (let i = 0; i < 200; i++) {
      const job = (await call("GET", `/v1/jobs/${id}`, { key: p.key })).json.data;
      if (job.files.length >= 2) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(await objectsOf(p.id, id)).toBeGreaterThanOrEqual(2);
    const canceled = await call("DELETE", `/v1/jobs/${id}`, { key: p.key });
    expect(canceled.status).toBe(200);
    expect(canceled.json.data.status).toBe("canceled");
    expect(canceled.json.data.error.code).toBe("CANCELED");
    expect(canceled.json.data.files).toEqual([]);
    expect((await (await env.JOBS.get(id)).status()).status).toBe("terminated");
    await new Promise((r) => setTimeout(r, 2500));
    expect(await objectsOf(p.id, id)).toBe(0);
    expect((await call("GET", `/v1/jobs/${id}`, { key: p.key })).json.data.status).toBe("canceled");
  });

  it("deletes a finished job's files on DELETE, keeping its status", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(10));
    const job = await exportJob(p.key);
    expect(await objectsOf(p.id, job.id)).toBe(1);
    const res = await call("DELETE", `/v1/jobs/${job.id}`, { key: p.key });
    expect(res.json.data.status).toBe("succeeded");
    expect(res.json.data.files_expired).toBe(true);
    expect(await objectsOf(p.id, job.id)).toBe(0);
    expect((await call("GET", job.files[0].url, { key: p.key })).status).toBe(404);
  });

  it("a verify job's result is GET /v1/events/verify's answer, progress in chunks", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(50));
    const live = await call("GET", "/v1/events/verify", { key: p.key });
    const created = await call("POST", "/v1/jobs", { key: p.key, body: { type: "verify" } });
    expect(created.status).toBe(202);
    const job = await waitForJob(p.key, created.json.data.id);
    expect(job.status).toBe("succeeded");
    expect(job.result).toEqual(live.json.data);
    expect(job.result.ok).toBe(true);
    expect(job.progress.done).toBe(job.progress.total);
    expect(job.progress.total).toBeGreaterThan(0);
    expect(job.files).toBeUndefined();
  });

  it("the daily sweep deletes files 7 days after the job ended, not before", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(10));
    const job = await exportJob(p.key);
    const ended = Date.parse(job.files_expire_at) - 7 * 24 * 3600 * 1000;
    expect(Math.abs(ended - Date.parse(job.updated_at))).toBeLessThan(1000);
    await sweepExpiredJobFiles(env, new Date(ended + 6 * 24 * 3600 * 1000));
    expect(await objectsOf(p.id, job.id)).toBe(1);
    await sweepExpiredJobFiles(env, new Date(ended + 7 * 24 * 3600 * 1000 + 1000));
    expect(await objectsOf(p.id, job.id)).toBe(0);
    const after = (await call("GET", `/v1/jobs/${job.id}`, { key: p.key })).json.data;
    expect(after.files_expired).toBe(true);
    expect(after.files).toEqual([]);
  });
});
