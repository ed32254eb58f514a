import type { VerifyResult, VerifyWindow } from "./verify";
import { lastGapId, MAX_WALKS } from "./verify";
import { checkChunk, mergeChunks, planVerify, verifyParallelism, type ChunkResult, type VerifyPlan } from "./verify-chunks";
import type { VerifyCheckpoint } from "./verify-checkpoint";
import { forgetShard, projectShard, shardDb } from "../storage/shards";

/**
 * What GET /v1/events/verify runs: plan, check the chunks `parallel` at a
 * time, each in its own VerifyChunk object (its own invocation and budget),
 * and merge. A chain_broken is looked at again, as verifyLive and
 * verifyProject do, when something else explains it: the checkpoint's own
 * rows were purged since (the whole history is walked instead), a retention
 * purge committed during the run, or the project moved to another shard.
 * A real break is found again and reported.
 */
export async function verifyChunked(
  env: Env,
  projectId: string,
  window: VerifyWindow,
  options: { parallel?: number; chunkEvents?: number; since?: VerifyCheckpoint | null } = {},
): Promise<VerifyResult> {
  let since = options.since ?? null;
  let gapsBefore: number | null = null;
  for (let run = 1; ; run++) {
    const plan = await planVerify(env, projectId, window, { chunkEvents: options.chunkEvents, since });
    const db = shardDb(env, plan.shard);
    gapsBefore ??= await lastGapId(db, projectId);
    const result = await mergeChunks(env, plan, await runChunks(env, plan, options.parallel ?? verifyParallelism(env)));
    if (result.failure?.reason !== "chain_broken" || run === MAX_WALKS) return result;
    if (plan.since) {
      since = null;
      continue;
    }
    forgetShard(projectId);
    const moved = (await projectShard(env, projectId)) !== plan.shard;
    const gapsAfter = await lastGapId(db, projectId);
    if (!moved && gapsAfter === gapsBefore) return result;
    gapsBefore = moved ? null : gapsAfter;
  }
}

/** Every chunk's result, `parallel` at a time; none is started past a chunk that already failed. */
async function runChunks(env: Env, plan: VerifyPlan, parallel: number): Promise<ChunkResult[]> {
  const results: ChunkResult[] = [];
  let next = 0;
  let failedAt = Infinity;
  const worker = async () => {
    for (let i = next++; i < plan.chunks.length && i < failedAt; i = next++) {
      results[i] = await runChunk(env, plan, i);
      if (results[i].failure) failedAt = Math.min(failedAt, i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(parallel, plan.chunks.length)) }, worker));
  return results;
}

/**
 * One chunk in its own object, named for this run and chunk, so chunks run
 * on separate objects (in parallel, in production). It gets the plan with
 * only its own range: the whole list would cross RPC once per chunk.
 */
export async function runChunk(env: Env, plan: VerifyPlan, index: number, attempt = 1): Promise<ChunkResult> {
  const own = { ...plan, chunks: [plan.chunks[index]] };
  const object = env.VERIFY_CHUNK.get(env.VERIFY_CHUNK.idFromName(`${plan.projectId}:${plan.id}:${index}:${attempt}`));
  try {
    return (await object.check(own, 0)) as ChunkResult;
  } catch (error) {
    // An object reset or overloaded is tried again on a fresh one; after that the chunk is checked
    // here, on this invocation's own budget (one chunk is ~15 queries), so verify still answers its result.
    if (attempt < 2) return runChunk(env, plan, index, attempt + 1);
    console.warn(`verify ${plan.projectId}: chunk ${index} failed twice in its own object; checking it in the coordinator`, error);
    return checkChunk(env, own, 0);
  }
}
