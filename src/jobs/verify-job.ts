import { checkChunk, mergeChunks, planVerify, PARALLEL_CHUNKS, type ChunkResult, type VerifyPlan } from "../chain/verify-chunks";
import type { VerifyResult, VerifyWindow } from "../chain/verify";
import { countChunk, getJob, startJob } from "./job-store";

/**
 * A verify job on the chunked engine (src/chain/verify-chunks.ts): a plan,
 * one step per chunk (up to PARALLEL_CHUNKS at once), and a merge. progress
 * counts chunks checked; the result is GET /v1/events/verify's answer.
 */
export interface VerifyParams {
  window: VerifyWindow;
}

export async function planVerifyJob(env: Env, projectId: string, jobId: string): Promise<VerifyPlan | null> {
  const job = await getJob(env, projectId, jobId);
  if (!job || (job.status !== "queued" && job.status !== "running")) return null;
  const plan = await planVerify(env, projectId, (job.params as unknown as VerifyParams).window);
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

export { PARALLEL_CHUNKS };

export function mergeVerifyJob(env: Env, plan: VerifyPlan, results: ChunkResult[]): Promise<VerifyResult> {
  return mergeChunks(env, plan, results);
}
