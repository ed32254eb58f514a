// The Witness worker as src/index.ts assembles it, plus one bench-only route: the jobs bench
// (jobs.bench.mjs) runs the chunked verify engine with 1, 2 and 4 chunks at a time, which no
// API route lets a client choose (GET /v1/events/verify and the verify job use VERIFY_PARALLELISM).
// `npm run bench -- jobs` starts wrangler dev with this file as its entry; nothing else differs.
import app from "../../src/app";
import { verifyChunked } from "../../src/chain/verify-run";
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

export default meteredHandlers<Env>({
  // Only a bench's wrangler dev on 127.0.0.1 runs this entry; the route has no key check.
  fetch: (request, env, ctx) => {
    const url = new URL(request.url);
    return url.pathname === "/__bench/verify" ? benchVerify(url, env) : app.fetch(request, env, ctx);
  },
  scheduled,
}) satisfies ExportedHandler<Env>;
