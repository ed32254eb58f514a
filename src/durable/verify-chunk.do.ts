import { DurableObject } from "cloudflare:workers";
import { checkChunk, type ChunkResult, type VerifyPlan } from "../chain/verify-chunks";

/**
 * One chunk of a chunked verify (src/chain/verify-chunks.ts), in its own
 * invocation with its own budget of D1 queries and subrequests. Addressed
 * per run and chunk, so chunks run on separate objects; it stores nothing.
 */
export class VerifyChunk extends DurableObject<Env> {
  check(plan: VerifyPlan, index: number): Promise<ChunkResult> {
    return checkChunk(this.env, plan, index);
  }
}
