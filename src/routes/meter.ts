import { Hono } from "hono";
import { ApiError } from "../lib/errors";
import { LIMITS, meterEnabled, meterReport, meterTotals, resetMeterReport } from "../lib/meter";
import type { AppEnv } from "../middleware/app-env";

/**
 * The invocation meter's report, for the benches: they run the Worker under
 * `wrangler dev` and can only read this isolate's counts over HTTP.
 *   GET  /__meter        -> {data: {limits, invocations: [{invocation, d1Queries, subrequests, rowsRead, rowsWritten}],
 *                            rows: {d1Read, d1Written, doRead, doWritten}}} (rows: totals since the last reset)
 *   POST /__meter/reset  -> 204, the report emptied
 * It exists only where METER = "enforce" (tests, benches); anywhere else,
 * production included, every request here answers exactly as an unknown route
 * does. No part of the API: outside /v1, out of the OpenAPI document, no
 * credential (route names and counts only, nothing of any project). One
 * catch-all rather than a GET and a POST, so the route coverage checks
 * (which skip catch-alls) do not ask the OpenAPI document for it.
 */
const meter = new Hono<AppEnv>();

const notFound = () => new ApiError("NOT_FOUND", "No such route");

meter.all("*", (c) => {
  if (!meterEnabled(c.env)) throw notFound();
  const path = c.req.path.replace(/\/$/, "");
  if (c.req.method === "GET" && path === "/__meter") {
    // This route's own calls are no operation of Witness's.
    const invocations = meterReport().filter((r) => !r.invocation.includes(" /__meter"));
    return c.json({ data: { limits: LIMITS, invocations, rows: meterTotals() } });
  }
  if (c.req.method === "POST" && path === "/__meter/reset") {
    resetMeterReport();
    return c.body(null, 204);
  }
  throw notFound();
});

export default meter;
