import { env } from "cloudflare:workers";
import { introspectWorkflow } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { jobPrefix } from "../../src/jobs/job-files";
import { call, createProject, createScopedKey, ingestMany } from "../helpers";
import { waitForJob } from "../jobs/job-helpers";

/**
 * Canceling or deleting a job needs the scope of the key that created it (an
 * admin's job needs admin) or that same key, and each cancel or delete of an
 * export job (the jobs with files) is recorded in the project's chain.
 */
const events = (n: number) => Array.from({ length: n }, (_, i) => ({ action: `doc.${i % 3}`, actor: { id: `u_${i % 4}` }, metadata: { i } }));

async function exportJob(key: string, body: Record<string, unknown> = {}) {
  const created = await call("POST", "/v1/jobs", { key, body: { type: "export", format: "json", ...body } });
  expect(created.status).toBe(202);
  const job = await waitForJob(key, created.json.data.id);
  expect(job.status).toBe("succeeded");
  return job;
}

const objectsOf = async (projectId: string, id: string) => (await env.EXPORTS.list({ prefix: jobPrefix(projectId, id) })).objects.length;

async function selfAudit(key: string, action: string) {
  const res = await call("GET", `/v1/events?action=${action}`, { key });
  expect(res.status).toBe(200);
  return res.json.data as any[];
}

describe("who may cancel or delete a job", () => {
  it("a read key cannot delete an admin's evidence export: 403, its files stay and nothing is recorded", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(12));
    const reader = await createScopedKey(p.id, ["read"]);
    const job = await exportJob(p.key, { evidence: true });
    const files = await objectsOf(p.id, job.id);
    expect(files).toBeGreaterThan(1);

    const refused = await call("DELETE", `/v1/jobs/${job.id}`, { key: reader.key });
    expect(refused.status).toBe(403);
    expect(refused.json.error.code).toBe("FORBIDDEN");
    expect(refused.json.error.message).toMatch(/admin/);
    expect(refused.json.error.details).toMatchObject({ required_scope: "admin" });
    expect(await objectsOf(p.id, job.id)).toBe(files);
    expect((await call("GET", job.files[0].url, { key: reader.key })).status).toBe(200);
    expect(await selfAudit(p.key, "witness.job.deleted")).toEqual([]);
    expect(job).toMatchObject({ created_by: p.prefix, created_by_scope: "admin" });

    // The admin may, and the chain says who deleted what.
    const deleted = await call("DELETE", `/v1/jobs/${job.id}`, { key: p.key });
    expect(deleted.status).toBe(200);
    expect(deleted.json.data).toMatchObject({ status: "succeeded", files: [], files_expired: true });
    expect(await objectsOf(p.id, job.id)).toBe(0);
    const [audit, ...more] = await selfAudit(p.key, "witness.job.deleted");
    expect(more).toEqual([]);
    expect(audit).toMatchObject({
      actor: { type: "api_key", id: p.prefix },
      targets: [{ type: "job", id: job.id }],
      metadata: { type: "export", status: "succeeded", evidence: true, files: files, created_by: p.prefix, created_by_scope: "admin" },
    });
    // Deleting it again deletes nothing and records nothing more.
    expect((await call("DELETE", `/v1/jobs/${job.id}`, { key: p.key })).status).toBe(200);
    expect(await selfAudit(p.key, "witness.job.deleted")).toHaveLength(1);
  });

  it("a read key's job may be deleted by that key or any key with read; each delete is recorded", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(5));
    const reader = await createScopedKey(p.id, ["read"]);
    const another = await createScopedKey(p.id, ["read"]);
    const own = await exportJob(reader.key);
    expect(own).toMatchObject({ created_by: reader.prefix, created_by_scope: "read" });
    expect((await call("DELETE", `/v1/jobs/${own.id}`, { key: reader.key })).status).toBe(200);
    const theirs = await exportJob(reader.key);
    expect((await call("DELETE", `/v1/jobs/${theirs.id}`, { key: another.key })).status).toBe(200);
    const audits = await selfAudit(p.key, "witness.job.deleted");
    expect(audits.map((e) => [e.actor.id, e.targets[0].id])).toEqual([
      [another.prefix, theirs.id],
      [reader.prefix, own.id],
    ]);
  });

  it("a job made before jobs recorded their creator needs admin", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(5));
    const reader = await createScopedKey(p.id, ["read"]);
    const job = await exportJob(reader.key);
    await p.db.prepare("UPDATE jobs SET created_by = NULL, created_by_scope = NULL WHERE id = ?").bind(job.id).run();
    const refused = await call("DELETE", `/v1/jobs/${job.id}`, { key: reader.key });
    expect(refused.status).toBe(403);
    expect(refused.json.error.details).toMatchObject({ required_scope: "admin" });
    expect(await objectsOf(p.id, job.id)).toBe(1);
    expect((await call("DELETE", `/v1/jobs/${job.id}`, { key: p.key })).status).toBe(200);
    expect(await objectsOf(p.id, job.id)).toBe(0);
  });

  it("canceling a running export is recorded as witness.job.canceled; an admin's running verify cannot be canceled by a read key", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(5));
    const reader = await createScopedKey(p.id, ["read"]);
    await using workflows = await introspectWorkflow(env.JOBS);
    // Held at its first step for about a minute (the engine's retry delays): still queued when canceled.
    await workflows.modifyAll(async (m) => {
      await m.mockStepError({ name: "plan" }, new Error("held by the test"), 6);
    });
    const exporting = await call("POST", "/v1/jobs", { key: reader.key, body: { type: "export", format: "csv" } });
    const verifying = await call("POST", "/v1/jobs", { key: p.key, body: { type: "verify" } });
    expect([exporting.status, verifying.status]).toEqual([202, 202]);

    expect((await call("DELETE", `/v1/jobs/${verifying.json.data.id}`, { key: reader.key })).status).toBe(403);
    const canceled = await call("DELETE", `/v1/jobs/${exporting.json.data.id}`, { key: reader.key });
    expect(canceled.status).toBe(200);
    expect(canceled.json.data.status).toBe("canceled");
    const [audit] = await selfAudit(p.key, "witness.job.canceled");
    expect(audit).toMatchObject({ actor: { type: "api_key", id: reader.prefix }, targets: [{ type: "job", id: exporting.json.data.id }], metadata: { type: "export", status: "queued" } });
    // A verify has no files: canceling it is not an act on anyone's data, and is not recorded.
    expect((await call("DELETE", `/v1/jobs/${verifying.json.data.id}`, { key: p.key })).json.data.status).toBe("canceled");
    expect(await selfAudit(p.key, "witness.job.canceled")).toHaveLength(1);
  });
});
