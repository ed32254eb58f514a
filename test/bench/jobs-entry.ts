// The Witness worker as src/index.ts assembles it, plus one bench-only route: the jobs bench
// (jobs.bench.mjs) runs the chunked verify engine with 1, 2 and 4 chunks at a time, which no
// API route lets a client choose (GET /v1/events/verify and the verify job use VERIFY_PARALLELISM);
// and the parallel bench (parallel.bench.mjs) plans, checks and merges a verify's chunks through
// three more, so that its chunks can run in separate runtimes, as they do in production.
// `npm run bench -- jobs` starts wrangler dev with this file as its entry; nothing else differs.
import app from "../../src/app";
import { mergeChunks, planVerify, type ChunkResult, type VerifyPlan } from "../../src/chain/verify-chunks";
import { runChunk, verifyChunked } from "../../src/chain/verify-run";
import { meteredHandlers } from "../../src/lib/metered-entry";
import { scheduled } from "../../src/scheduled";

export { ExportPart, JobWorkflow, ProjectLedger, RateLimiter, StreamDelivery, VerifyChunk } from "../../src/index";

/** GET /__bench/verify?project=<id>&parallel=<n>: the whole-history verify GET /v1/events/verify runs, with its parallelism set. */
async function benchVerify(url: URL, env: Env): Promise<Response> {
  const projectId = url.searchParams.get("project") ?? "";
  const parallel = Number(url.searchParams.get("parallel") ?? "4");
  if (!projectId || !Number.isSafeInteger(parallel) || parallel < 1) return Response.json({ error: "project and parallel >= 1 are required" }, { status: 400 });
  return Response.json({ data: await verifyChunked(env, projectId, { from: null, to: null }, { parallel }) });
}

/**
 * POST /__bench/plan {project}, /__bench/chunk {plan, index}, /__bench/merge {plan, results}: the
 * three parts of verifyChunked (src/chain/verify-run.ts) apart, a chunk checked by its runChunk
 * (in a VerifyChunk object of its own), so a driver may send each chunk to another runtime.
 */
async function benchPart(part: string, request: Request, env: Env): Promise<Response> {
  const body = await request.json<{ project?: string; plan: VerifyPlan; index: number; results: ChunkResult[] }>();
  if (part === "plan") return Response.json(await planVerify(env, body.project ?? "", { from: null, to: null }));
  if (part === "merge") return Response.json(await mergeChunks(env, body.plan, body.results));
  return Response.json(await runChunk(env, body.plan, body.index));
}

const PARTS = /^\/__bench\/(plan|chunk|merge)$/;

export default meteredHandlers<Env>({
  // Only a bench's wrangler dev on 127.0.0.1 runs this entry; the routes have no key check.
  fetch: (request, env, ctx) => {
    const url = new URL(request.url);
    if (url.pathname === "/__bench/verify") return benchVerify(url, env);
    const part = PARTS.exec(url.pathname)?.[1];
    return part && request.method === "POST" ? benchPart(part, request, env) : app.fetch(request, env, ctx);
  },
  scheduled,
}) satisfies ExportedHandler<Env>;
