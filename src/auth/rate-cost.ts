/**
 * Units of the per-IP budget one request spends. A count alone let six clients
 * of cheap-looking searches slow every tenant, so the reads whose work grows
 * with the data cost more:
 * - search 5: an FTS5 query over up to 8 prefix terms walks posting lists and
 *   joins them to events, several times the work of a list page (one index
 *   range of at most 200 rows), which costs 1;
 * - verify 20 and export 20: each reads every event in its range, page after
 *   page, hashing (verify) or staging batches in R2 (export); at the default
 *   1500 units an IP runs at most 75 of them a minute. A flat price does not
 *   bound how long one runs on a large project, so each project also runs
 *   one at a time, from a budget of its own (project-walk.ts);
 * - job 20: POST /v1/jobs starts an export or a verify of the whole project
 *   (a Workflow, src/jobs/), the same walk; a project runs a few at once
 *   (JOB_MAX_RUNNING) instead of one. Erasures' jobs are made by
 *   DELETE /v1/actors/:id and priced there.
 * Fixed prices, known before anything runs: the real size of the work is only
 * known after doing it, which is what the limiter must prevent.
 */
export const COSTS = { search: 5, verify: 20, export: 20, job: 20 } as const;

export function requestCost(method: string, path: string): number {
  if (method === "POST" && /^\/v1\/jobs\/?$/.test(path)) return COSTS.job;
  if (method !== "GET" && method !== "HEAD") return 1;
  if (/^\/v1\/events\/search\/?$/.test(path)) return COSTS.search;
  if (/^\/v1\/events\/verify\/?$/.test(path)) return COSTS.verify;
  if (path === "/v1/exports" || path.startsWith("/v1/exports/")) return COSTS.export;
  return 1;
}
