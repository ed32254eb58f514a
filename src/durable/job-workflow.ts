import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep, type WorkflowStepConfig } from "cloudflare:workers";
import type { ChunkResult } from "../chain/verify-chunks";
import { asInvocation, meterEnabled } from "../lib/meter";
import { meterEnv, meterFetch } from "../lib/metered-bindings";
import { erasureJobStep } from "../jobs/erasure-job";
import { exportParts, planExport, writeManifest } from "../jobs/export-job";
import { keepAlive } from "../jobs/job-resume";
import { finishJob, getJob, neverFails, noteStepFailure, RETRYING, type JobType } from "../jobs/job-store";
import { mergeVerifyJob, planVerifyJob, verifyChunkStep, verifyParallelism } from "../jobs/verify-job";
import { signalIntegrity, verifySignal } from "../alerts/integrity";

export interface JobParams {
  jobId: string;
  projectId: string;
  type: JobType;
}

/**
 * Every step is its own invocation in production, with its own budget; each
 * is bounded (a part, a chunk) and resumes from the job's record, so a crash
 * or a deploy mid-way repeats at most one step. Retried 5 times, backing off
 * (2 s, doubling: the longest wait, 32 s, is well inside the minute after
 * which a job whose record does not move is taken for lost, job-resume.ts).
 */
const STEP: WorkflowStepConfig = { retries: { limit: 5, delay: "2 seconds", backoff: "exponential" }, timeout: "15 minutes" };

export class JobWorkflow extends WorkflowEntrypoint<Env, JobParams> {
  async run(event: WorkflowEvent<JobParams>, step: WorkflowStep): Promise<void> {
    const { jobId, projectId, type } = event.payload;
    // Each step is metered as one invocation (src/lib/meter.ts), named without its index so one kind is one row in the report,
    // and renews the job's record while it works: a record that stops moving is how a lost instance is told (job-resume.ts).
    const metered = <T extends Rpc.Serializable<T>>(name: string, work: (env: Env) => Promise<T>) =>
      step.do(name, STEP, () => this.invoke(name.replace(/-\d+$/, ""), (env) => keepAlive(env, projectId, jobId, () => work(env)))) as Promise<T>;
    try {
      if (type === "erasure") {
        // Bounded steps until the erasure is applied (src/jobs/erasure-job.ts); its record says how far.
        for (let k = 0; !(await metered(`erase-${k}`, (env) => erasureJobStep(env, projectId, jobId))).done; k++);
        return;
      }
      if (type === "export") {
        await metered("plan", (env) => planExport(env, projectId, jobId));
        for (let k = 0; ; k++) {
          const part = await metered(`part-${k}`, (env) => exportParts(env, projectId, jobId));
          if (part.stopped) return;
          if (part.last) break;
        }
        if ((await metered("manifest", (env) => writeManifest(env, projectId, jobId))).stopped) return;
        await metered("finish", async (env) => {
          const job = await getJob(env, projectId, jobId);
          return finishJob(env, projectId, jobId, { status: "succeeded", total: job?.done ?? 0 });
        });
        return;
      }
      // An incremental walk that finds chain_broken is walked again whole (the checkpoint's own rows may be purged), as GET /v1/events/verify does.
      for (const whole of [false, true]) {
        const tag = whole ? "whole-" : "";
        const plan = await metered(`${tag}plan`, (env) => planVerifyJob(env, projectId, jobId, whole));
        if (!plan) return;
        const results: ChunkResult[] = [];
        let failed = false;
        const parallel = verifyParallelism(this.env);
        for (let at = 0; at < plan.chunks.length && !failed; at += parallel) {
          const batch = plan.chunks.slice(at, at + parallel).map((_, i) => metered(`${tag}chunk-${at + i}`, (env) => verifyChunkStep(env, projectId, jobId, plan, at + i)));
          for (const [i, result] of (await Promise.all(batch)).entries()) {
            if (result === null) return; // canceled
            results[at + i] = result;
            if (result.failure) failed = true;
          }
        }
        const result = await metered(`${tag}merge`, (env) => mergeVerifyJob(env, plan, results));
        if (!whole && plan.since && result.failure?.reason === "chain_broken") continue;
        await metered("finish", (env) => finishJob(env, projectId, jobId, { status: "succeeded", result }));
        const found = verifySignal(result, jobId, `Verify job ${jobId}`);
        if (found) await metered("integrity-alert", (env) => signalIntegrity(env, projectId, found));
        return;
      }
    } catch (error) {
      // A step that failed all its retries: the job says why, and its files are kept until they expire.
      const message = error instanceof Error ? error.message : String(error);
      // An erasure is never given up: its job stays running, says why, and is resumed after JOB_STALL_SECONDS (job-resume.ts).
      if (neverFails(type)) await metered("retry-later", (env) => noteStepFailure(env, projectId, jobId, { code: RETRYING, message }));
      else await metered("fail", (env) => finishJob(env, projectId, jobId, { status: "failed", error: { code: "JOB_FAILED", message } }));
    }
  }

  private invoke<T>(name: string, work: (env: Env) => Promise<T>): Promise<T> {
    if (!meterEnabled(this.env)) return work(this.env);
    meterFetch();
    return asInvocation(`JobWorkflow.${name}`, () => work(meterEnv(this.env)));
  }
}
