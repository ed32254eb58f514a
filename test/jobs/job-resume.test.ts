import { env } from "cloudflare:workers";
import { createExecutionContext, createScheduledController, introspectWorkflow, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { planExport, exportPart } from "../../src/jobs/export-job";
import { resumeLostJobs } from "../../src/jobs/job-resume";
import { insertJob } from "../../src/jobs/job-store";
import worker from "../../src/index";
import { call, createProject, ingestMany } from "../helpers";
import { getBytes, jobBytes, text, waitForJob } from "./job-helpers";

/**
 * A job whose Workflow instance stopped moving (lost to an incident, or to a
 * restart of the local runtime) stays running at the parts it recorded. Past
 * JOB_STALL_SECONDS without a change to its record, GET /v1/jobs/:id and the
 * daily cron resume it, and it finishes from its record: each event once.
 */
const EVENTS = 230;
const PART_ROWS = 40;
const events = Array.from({ length: EVENTS }, (_, i) => ({ action: `doc.${i % 3}`, actor: { id: `u_${i % 4}` }, metadata: { i } }));

/** A running export job with two parts recorded and no live instance: the state an interrupted job is left in. */
async function interruptedJob(p: Awaited<ReturnType<typeof createProject>>) {
  // The params a POST records, taken from a real job of the same project.
  const model = await call("POST", "/v1/jobs", { key: p.key, body: { type: "export", format: "csv", part_rows: PART_ROWS } });
  expect(model.status).toBe(202);
  expect((await waitForJob(p.key, model.json.data.id)).status).toBe("succeeded");
  const { params } = (await p.db.prepare("SELECT params FROM jobs WHERE id = ?").bind(model.json.data.id).first<{ params: string }>())!;
  const id = crypto.randomUUID();
  await insertJob(env, p.id, id, "export", JSON.parse(params));
  await planExport(env, p.id, id);
  for (let i = 0; i < 2; i++) expect((await exportPart(env, p.id, id)).last).toBe(false);
  const row = await p.db.prepare("SELECT status, progress_done AS done, files FROM jobs WHERE id = ?").bind(id).first<{ status: string; done: number; files: string }>();
  expect(row).toMatchObject({ status: "running", done: 2 * PART_ROWS });
  const parts = (JSON.parse(row!.files) as Array<{ name: string; sha256: string }>).map(({ name, sha256 }) => ({ name, sha256 }));
  return { id, parts };
}

const makeStale = (p: { db: D1Database }, id: string) =>
  p.db.prepare("UPDATE jobs SET updated_at = ? WHERE id = ?").bind(new Date(Date.now() - 3600_000).toISOString(), id).run();

/** The record last moved this long ago: the runtime running its steps died then. */
const idleFor = (p: { db: D1Database }, id: string, ms: number) =>
  p.db.prepare("UPDATE jobs SET updated_at = ? WHERE id = ?").bind(new Date(Date.now() - ms).toISOString(), id).run();

const updatedAt = async (p: { db: D1Database }, id: string) =>
  (await p.db.prepare("SELECT updated_at FROM jobs WHERE id = ?").bind(id).first<{ updated_at: string }>())!.updated_at;

/** The cron Cloudflare runs every minute, as it invokes it. */
async function minuteCron() {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ scheduledTime: new Date(), cron: "* * * * *" }), env, ctx);
  await waitOnExecutionContext(ctx);
}

/** An instance that ran to its end while the record said succeeded, so its steps did nothing: the record says running again after. */
async function endedInstance(p: { id: string; db: D1Database }, id: string) {
  await p.db.prepare("UPDATE jobs SET status = 'succeeded' WHERE id = ?").bind(id).run();
  const instance = await env.JOBS.create({ id, params: { jobId: id, projectId: p.id, type: "export" } });
  for (let i = 0; (await instance.status()).status !== "complete"; i++) {
    expect(i).toBeLessThan(400);
    await new Promise((r) => setTimeout(r, 25));
  }
  await p.db.prepare("UPDATE jobs SET status = 'running' WHERE id = ?").bind(id).run();
}

async function expectExact(p: { key: string }, job: any, parts: Array<{ name: string; sha256: string }>) {
  expect(job.status).toBe("succeeded");
  const expected = await getBytes(p.key, "/v1/exports?format=csv");
  expect(text(await jobBytes(p.key, job))).toBe(text(expected.bytes));
  expect(job.progress).toEqual({ done: EVENTS, total: EVENTS });
  expect(job.files.length).toBe(Math.ceil(EVENTS / PART_ROWS));
  expect(job.files.reduce((n: number, f: { rows: number }) => n + f.rows, 0)).toBe(EVENTS);
  // The parts recorded before the stall are kept as they were, not written again from the start.
  expect(job.files.slice(0, 2).map((f: { name: string; sha256: string }) => ({ name: f.name, sha256: f.sha256 }))).toEqual(parts);
}

describe("stalled jobs", () => {
  it("a stale job whose instance never started is resumed by GET /v1/jobs/:id and finishes with every event once", async () => {
    const p = await createProject();
    await ingestMany(p.key, events);
    const { id, parts } = await interruptedJob(p);
    // Not stale yet: GET leaves it alone (no instance is created for it).
    const fresh = await call("GET", `/v1/jobs/${id}`, { key: p.key });
    expect(fresh.json.data).toMatchObject({ status: "running", progress: { done: 2 * PART_ROWS } });
    await expect(env.JOBS.get(id)).rejects.toThrow();
    await makeStale(p, id);
    const job = await waitForJob(p.key, id);
    await expectExact(p, job, parts);
  });

  it("a stale job whose instance ended early is restarted by the daily cron and finishes with every event once", async () => {
    const p = await createProject();
    await ingestMany(p.key, events);
    const { id, parts } = await interruptedJob(p);
    // An instance that stopped without finishing the job.
    await endedInstance(p, id);
    await makeStale(p, id);
    expect(await resumeLostJobs(env, new Date())).toBeGreaterThanOrEqual(1);
    const job = await waitForJob(p.key, id);
    await expectExact(p, job, parts);
  });

  it("an erasure job whose step fails all its retries is not failed: it says why and is resumed until the erasure is applied", async () => {
    const p = await createProject();
    await ingestMany(p.key, [
      ...Array.from({ length: 6 }, (_, i) => ({ action: "doc.read", actor: { id: "u_gone", name: "Gone Person", email: "gone@example.com" }, metadata: { i } })),
      { action: "doc.read", actor: { id: "u_kept" } },
    ]);
    let jobId: string;
    {
      await using workflows = await introspectWorkflow(env.JOBS);
      await workflows.modifyAll(async (m) => {
        await m.disableRetryDelays();
        // The first step and its 5 retries: an outage longer than the step's whole retry budget.
        await m.mockStepError({ name: "erase-0" }, new Error("injected outage"), 6);
      });
      const res = await call("DELETE", "/v1/actors/u_gone", { key: p.key });
      expect(res.status).toBe(202);
      jobId = res.json.data.job_id;
      let job: any;
      for (let i = 0; ; i++) {
        expect(i).toBeLessThan(800);
        job = (await call("GET", `/v1/jobs/${jobId}`, { key: p.key })).json.data;
        if (job.error) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      // Queued still: the first step never went through.
      expect(job).toMatchObject({ status: "queued", error: { code: "JOB_RETRYING", message: expect.stringContaining("injected outage") } });
      // Not given up, and the erasure still applies to every read meanwhile.
      const served = await call("GET", "/v1/events?actor_id=u_gone", { key: p.key });
      expect(served.text).not.toContain("Gone Person");
    }
    // Past JOB_STALL_SECONDS without a step, the daily cron resumes it; it finishes and clears the error.
    await makeStale(p, jobId);
    expect(await resumeLostJobs(env, new Date())).toBeGreaterThanOrEqual(1);
    const job = await waitForJob(p.key, jobId, [], 60_000);
    expect(job).toMatchObject({ status: "succeeded", result: { anonymized: 6 } });
    expect(job.error).toBeUndefined();
    const stored = await p.db.prepare("SELECT count(*) AS n FROM events WHERE project_id = ? AND actor_name = 'Gone Person'").bind(p.id).first<{ n: number }>();
    expect(stored!.n).toBe(0);
  }, 60_000);
});

/**
 * A job whose runtime died does not wait JOB_STALL_SECONDS (20 minutes by
 * default): once its record has not moved for a minute (a running step renews
 * it every 15 s), an instance that is gone, ended, or says it runs although
 * nothing moves is lost, and the next GET or the per-minute cron restarts it.
 */
describe("lost jobs", () => {
  it("a job whose instance is gone is resumed by the next GET a minute and a half after its record last moved", async () => {
    expect(env.JOB_STALL_SECONDS).toBe("1200");
    const p = await createProject();
    await ingestMany(p.key, events);
    const { id, parts } = await interruptedJob(p);
    await idleFor(p, id, 90_000);
    expect((await call("GET", `/v1/jobs/${id}`, { key: p.key })).status).toBe(200);
    // That one read created the lost instance again (under the job's id).
    await expect(env.JOBS.get(id)).resolves.toBeTruthy();
    const job = await waitForJob(p.key, id);
    await expectExact(p, job, parts);
  });

  it("the list resumes a lost job too", async () => {
    const p = await createProject();
    await ingestMany(p.key, events);
    const { id, parts } = await interruptedJob(p);
    await idleFor(p, id, 90_000);
    const list = await call("GET", "/v1/jobs", { key: p.key });
    expect(list.json.data.map((j: { id: string }) => j.id)).toContain(id);
    await expect(env.JOBS.get(id)).resolves.toBeTruthy();
    await expectExact(p, await waitForJob(p.key, id), parts);
  });

  it("the per-minute cron restarts a job whose instance ended without finishing it, and leaves a job that moved within the minute alone", async () => {
    const p = await createProject();
    await ingestMany(p.key, events);
    const { id, parts } = await interruptedJob(p);
    await endedInstance(p, id);
    await idleFor(p, id, 90_000);
    // Another job with no instance whose record moved just now: its POST may still be creating the instance.
    const { id: recent } = await interruptedJob(p);
    const [lostBefore, recentBefore] = [await updatedAt(p, id), await updatedAt(p, recent)];
    await minuteCron();
    // Claimed (its record moved) and restarted: it finishes from its record.
    expect(await updatedAt(p, id)).not.toBe(lostBefore);
    expect(await updatedAt(p, recent)).toBe(recentBefore);
    await expect(env.JOBS.get(recent)).rejects.toThrow();
    await expectExact(p, await waitForJob(p.key, id), parts);
  });
});
