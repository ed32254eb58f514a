import { checkChunk, mergeChunks, planVerify, verifyParallelism, type ChunkResult, type VerifyPlan } from "../chain/verify-chunks";
import type { VerifyResult, VerifyWindow } from "../chain/verify";
import { ledgerOf } from "../chain/ledger";
import { countChunk, getJob, startJob } from "./job-store";

/**
 * A verify job on the chunked engine (src/chain/verify-chunks.ts): a plan,
 * one step per chunk (up to VERIFY_PARALLELISM at once), and a merge. progress
 * counts chunks checked; the result is GET /v1/events/verify's answer.
 */
export interface VerifyParams {
  window: VerifyWindow;
  /** "checkpoint": only what was recorded since the last whole verify that came out ok; absent on older jobs. */
  since?: "checkpoint" | null;
}

/**
 * The job's plan. `whole`: walk the whole history even if the job asked for an
 * incremental one, after an incremental run reported chain_broken (the
 * checkpoint's own rows may have been purged since), as GET /v1/events/verify does.
 */
export async function planVerifyJob(env: Env, projectId: string, jobId: string, whole = false): Promise<VerifyPlan | null> {
  const job = await getJob(env, projectId, jobId);
  if (!job || (job.status !== "queued" && job.status !== "running")) return null;
  const params = job.params as unknown as VerifyParams;
  const since = params.since === "checkpoint" && !whole ? await ledgerOf(env, projectId).verifyCheckpoint() : null;
  const plan = await planVerify(env, projectId, params.window, { since });
  if (job.status === "queued") await startJob(env, projectId, jobId, plan.chunks.length, []);
  return plan;
}

export async function verifyChunkStep(env: Env, projectId: string, jobId: string, plan: VerifyPlan, index: number): Promise<ChunkResult | null> {
  const job = await getJob(env, projectId, jobId);
  if (job?.status !== "running") return null;
  const result = await checkChunk(env, plan, index);
  await countChunk(env, projectId, jobId, index);
  return result;
}

export { verifyParallelism };

export function mergeVerifyJob(env: Env, plan: VerifyPlan, results: ChunkResult[]): Promise<VerifyResult> {
  return mergeChunks(env, plan, results);
}
