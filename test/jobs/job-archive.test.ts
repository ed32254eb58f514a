import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { unzipSync } from "fflate";
import { checkEvidence } from "../../src/scripts/evidence-check.mjs";
import { archiveOrder, archiveRefusal, MAX_ARCHIVE_FILES } from "../../src/jobs/job-archive";
import { fileKey } from "../../src/jobs/job-files";
import { finishJob, getJob, insertJob, markFilesExpired, startJob, type Job } from "../../src/jobs/job-store";
import { call, createProject, createScopedKey, ingestMany, openApiDocument, warmKey } from "../helpers";
import { getBytes, waitForJob } from "./job-helpers";

const at = (i: number) => new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString();
const events = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ action: `doc.${i % 3}`, actor: { id: `u_${i % 4}`, name: `Ünïcode ${i} ✓` }, metadata: { i }, occurred_at: at(i) }));

type JobFile = { name: string; url: string; bytes: number };

async function finishedExport(key: string, body: Record<string, unknown>) {
  const created = await call("POST", "/v1/jobs", { key, body: { type: "export", ...body } });
  expect(created.status).toBe(202);
  const job = await waitForJob(key, created.json.data.id);
  expect(job.status, JSON.stringify(job.error)).toBe("succeeded");
  return job as { id: string; files: JobFile[] };
}

/** The archive as a client saves it, unzipped. */
async function archive(key: string, id: string) {
  const res = await getBytes(key, `/v1/jobs/${id}/archive`);
  expect(res.status, new TextDecoder().decode(res.bytes.slice(0, 300))).toBe(200);
  expect(res.headers.get("Content-Type")).toBe("application/zip");
  expect(res.headers.get("Content-Disposition")).toBe(`attachment; filename="witness-${id}.zip"`);
  return { zip: res.bytes, entries: unzipSync(res.bytes) };
}

async function refused(key: string, id: string, status: number, code: string) {
  const res = await call("GET", `/v1/jobs/${id}/archive`, { key });
  expect(res.status, res.text).toBe(status);
  expect(res.json.error.code).toBe(code);
  return res.json.error;
}

/** A job record set up by hand, in the state a test needs, with no workflow behind it. */
async function jobIn(projectId: string, status: "queued" | "running" | "failed"): Promise<string> {
  const id = crypto.randomUUID();
  await insertJob(env, projectId, id, "export", { format: "csv", part_rows: 10, filters: {}, selection: null });
  if (status !== "queued") await startJob(env, projectId, id, 0, { phase: "done" });
  if (status === "failed") await finishJob(env, projectId, id, { status: "failed", error: { code: "BOOM", message: "injected" } });
  return id;
}

describe("GET /v1/jobs/:id/archive", () => {
  it("zips an evidence export's files, manifest first, each entry the bytes of its own download, and the offline check accepts it", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(45));
    const job = await finishedExport(p.key, { format: "json", evidence: true, part_rows: 10 });
    expect(job.files.length).toBeGreaterThanOrEqual(6);
    const { entries } = await archive(p.key, job.id);
    const names = job.files.map((f) => f.name);
    expect(Object.keys(entries)).toEqual(["manifest.json", ...names.filter((n) => n !== "manifest.json")]);
    for (const f of job.files) {
      const download = await getBytes(p.key, f.url);
      expect(download.status).toBe(200);
      expect(entries[f.name], f.name).toEqual(download.bytes);
    }
    const vkey = (await call("GET", "/v1/log", { key: p.key })).json.data.vkey;
    const files = new Map(Object.entries(entries));
    const checked = await checkEvidence({
      manifest: new TextDecoder().decode(entries["manifest.json"]),
      vkey,
      readFile: async (n: string) => files.get(n) ?? null,
      names: [...files.keys()],
    });
    expect(checked).toMatchObject({ ok: true, rows: 45, complete: true });
  });

  it("zips a plain export's parts in order, compressed, and reads one R2 object per file", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(120));
    const small = await finishedExport(p.key, { format: "csv", part_rows: 60 });
    const large = await finishedExport(p.key, { format: "csv", part_rows: 10 });
    expect(large.files.length - small.files.length).toBe(10);
    const subrequests: number[] = [];
    for (const job of [small, large]) {
      await warmKey(p.key);
      expect((await call("POST", "/__meter/reset")).status).toBe(204);
      const { zip, entries } = await archive(p.key, job.id);
      expect(Object.keys(entries)).toEqual(job.files.map((f) => f.name));
      for (const f of job.files) expect(entries[f.name]).toEqual((await getBytes(p.key, f.url)).bytes);
      // Deflated: the zip is smaller than its files.
      expect(zip.length).toBeLessThan(job.files.reduce((n, f) => n + f.bytes, 0));
      const report = (await call("GET", "/__meter")).json.data.invocations as Array<{ invocation: string; subrequests: number }>;
      subrequests.push(report.find((r) => r.invocation === "GET /v1/jobs/:id/archive")!.subrequests);
    }
    // Ten more files, ten more R2 reads: nothing else grows with the job.
    expect(subrequests[1] - subrequests[0]).toBe(10);
  });

  it("is 404 in the envelope for another project's job, an unknown id and a verify job; a read-less key is 403", async () => {
    const p = await createProject();
    const other = await createProject();
    await ingestMany(other.key, events(5));
    const theirs = await finishedExport(other.key, { format: "csv" });
    await refused(p.key, theirs.id, 404, "NOT_FOUND");
    await refused(p.key, crypto.randomUUID(), 404, "NOT_FOUND");
    const verify = await call("POST", "/v1/jobs", { key: other.key, body: { type: "verify" } });
    expect((await waitForJob(other.key, verify.json.data.id)).status).toBe("succeeded");
    expect((await refused(other.key, verify.json.data.id, 404, "NOT_FOUND")).message).toMatch(/verify job has no files/);
    const ingestOnly = await createScopedKey(other.id, ["ingest"]);
    expect((await call("GET", `/v1/jobs/${theirs.id}/archive`, { key: ingestOnly.key })).status).toBe(403);
  });

  it("is 409 for a job queued, running or failed: its files are not a whole export", async () => {
    const p = await createProject();
    for (const status of ["queued", "running"] as const) {
      const error = await refused(p.key, await jobIn(p.id, status), 409, "CONFLICT");
      expect(error.details).toEqual({ reason: "job_not_finished", status });
      expect(error.message).toMatch(new RegExp(`job is ${status}`));
    }
    const failed = await refused(p.key, await jobIn(p.id, "failed"), 409, "CONFLICT");
    expect(failed.details).toEqual({ reason: "job_failed", status: "failed" });
  });

  it("is 404 for a job deleted, expired or missing a part, never a truncated zip", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(30));
    const deleted = await finishedExport(p.key, { format: "json", part_rows: 10 });
    expect((await call("DELETE", `/v1/jobs/${deleted.id}`, { key: p.key })).status).toBe(200);
    await refused(p.key, deleted.id, 404, "NOT_FOUND");

    const expired = await finishedExport(p.key, { format: "json", part_rows: 10 });
    await markFilesExpired(p.db, p.id, expired.id);
    expect((await refused(p.key, expired.id, 404, "NOT_FOUND")).details).toMatchObject({ files_expired: true });

    // The record says succeeded, but R2 lost a part: refused before the first byte, naming it.
    const damaged = await finishedExport(p.key, { format: "json", part_rows: 10 });
    await env.EXPORTS.delete(fileKey(p.id, damaged.id, damaged.files[1].name));
    expect((await refused(p.key, damaged.id, 404, "NOT_FOUND")).details).toEqual({ missing: [damaged.files[1].name] });
  });

  it("a part deleted while the zip streams fails the transfer rather than ending a zip without it", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(40));
    const job = await finishedExport(p.key, { format: "csv", part_rows: 10 });
    const { exports } = await import("cloudflare:workers");
    const res = await exports.default.fetch(new Request(`https://witness.test/v1/jobs/${job.id}/archive`, { headers: { Authorization: `Bearer ${p.key}`, "CF-Connecting-IP": "10.77.0.3" } }));
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    expect((await reader.read()).done).toBe(false);
    // An erasure or a DELETE racing the download.
    await env.EXPORTS.delete(job.files.slice(1).map((f) => fileKey(p.id, job.id, f.name)));
    const rest = (async () => {
      for (;;) if ((await reader.read()).done) return "ended";
    })();
    await expect(rest).rejects.toThrow();
  });
});

describe("the archive in the OpenAPI document", () => {
  it("is declared as a binary application/zip download with its errors", async () => {
    const op = (await openApiDocument()).paths["/v1/jobs/{id}/archive"].get;
    expect(op.operationId).toBe("getJobArchive");
    expect(op.responses["200"].content).toEqual({ "application/zip": { schema: { type: "string", format: "binary" } } });
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(["401", "403", "404", "409"]));
  });
});

describe("the archive's decisions", () => {
  const job = (over: Partial<Job>): Job => ({
    id: "j1", projectId: "p", type: "export", status: "succeeded", params: {}, done: 0, total: 0, state: null, files: [], result: null, error: null,
    createdAt: at(0), updatedAt: at(1), filesExpireAt: null, filesExpired: false, createdBy: null, ...over,
  });
  const part = (i: number, bytes = 100) => ({ name: `part-${String(i).padStart(6, "0")}.json`, bytes, rows: 1, sha256: "x" });

  it("refuses what fflate's zip32 or one request's subrequests cannot carry, and only that", () => {
    expect(archiveRefusal(job({ files: [part(1)] }))).toBeNull();
    expect(archiveRefusal(job({ files: Array.from({ length: MAX_ARCHIVE_FILES }, (_, i) => part(i + 1)) }))).toBeNull();
    const many = archiveRefusal(job({ files: Array.from({ length: MAX_ARCHIVE_FILES + 1 }, (_, i) => part(i + 1)) }));
    expect(many?.code).toBe("CONFLICT");
    expect(many?.details).toMatchObject({ reason: "archive_too_large", files: MAX_ARCHIVE_FILES + 1 });
    // 4 GiB of parts in all (each far below an entry's own limit): the offsets would wrap.
    const big = archiveRefusal(job({ files: Array.from({ length: 1024 }, (_, i) => part(i + 1, 4 * 1024 * 1024)) }));
    expect(big?.details).toMatchObject({ reason: "archive_too_large", bytes: 4 * 1024 ** 3 });
    expect(archiveRefusal(job({ files: Array.from({ length: 1000 }, (_, i) => part(i + 1, 4 * 1024 * 1024)) }))).toBeNull();
  });

  it("puts the manifest first and keeps the parts in the job's order", () => {
    const files = [part(1), part(2), { name: "manifest.json", bytes: 1, rows: 0, sha256: "m" }, part(3)];
    expect(archiveOrder(files).map((f) => f.name)).toEqual(["manifest.json", "part-000001.json", "part-000002.json", "part-000003.json"]);
  });

  it("answers 404 for a job record that is gone and the job that is not an export", async () => {
    const p = await createProject();
    expect(archiveRefusal(await getJob(env, p.id, "nope"))?.status).toBe(404);
    expect(archiveRefusal(job({ type: "erasure" }))?.status).toBe(404);
    expect(archiveRefusal(job({ status: "canceled", filesExpired: true }))?.status).toBe(404);
  });
});
