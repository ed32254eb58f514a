/**
 * Builds the tree of a project that held events before it had one, in
 * bounded steps from the ledger's alarm. Each step reads the next page of
 * rows from D1 in seq order and checks them as the ledger wrote them: seq
 * without holes, each prev_hash the hash before it, each hash recomputed from
 * the row. Only when the leaves reach the head does the last hash have to be
 * the head the ledger recorded; then, and only then, is the tree published.
 * So D1 alone (a rewritten row, a recomputed chain) can never get leaves into
 * a published tree: at worst it blocks the build, which GET /v1/log reports.
 *
 * Reading and hashing run outside the commit lock (rows up to the head never
 * change their hash); only the store runs under it, so an append never waits
 * on a page read, and no commit is in flight when the log turns ready.
 */
import { checkRow } from "../chain/chain-check";
import type { SigningKeyring } from "../sealing/signing-keys";
import type { BuildState } from "./log-store.ts";
import type { ProjectLog } from "./project-log.ts";
import { CHAIN_COLUMNS, chainRowOf, type ChainRow } from "../model/chain-row";
import type { LedgerHost } from "../storage/ledger-host";
import { rowsBySeq } from "../model/row-keys";
import { mergeBySeq, overArms } from "../model/periods";

export const BACKFILL_PAGE = 2000;
/** No HMAC keys: checkRow then checks hashes only. Signatures do not anchor the tree; the head does. */
const HASH_ONLY: SigningKeyring = { newest: 0, keys: new Map() };

/** The ledger the backfill runs in (src/storage/ledger-host.ts). */
export type BackfillDeps = LedgerHost;

/** The first problem in a page that should continue the tree after `lastHash`, if any. */
async function firstProblem(rows: ChainRow[], start: number, lastHash: string | null): Promise<BuildState["blocked"] | null> {
  const checks = await Promise.all(rows.map((r) => checkRow(HASH_ONLY, r)));
  let prev = lastHash;
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    if (row.seq !== start + i + 1) return { seq: start + i + 1, reason: "missing" };
    if (row.prev_hash !== prev) return { seq: row.seq, reason: "chain_broken" };
    if (!checks[i].hash) return { seq: row.seq, reason: "hash_mismatch" };
    prev = row.hash;
  }
  return rows.length === 0 ? { seq: start + 1, reason: "missing" } : null;
}

/** One page. Returns the log's status after it ("building" means call again). */
export async function backfillStep(log: ProjectLog, deps: BackfillDeps, pageSize = BACKFILL_PAGE): Promise<BuildState["status"]> {
  if (log.status !== "building") return log.status;
  const start = log.size;
  const lastHash = log.build.lastHash;
  const headSeq = deps.head().seq;
  // The page in each of the shard's arms (model/periods.ts), listed at each page (a page is thousands of rows), merged in seq order.
  const page = (arm: D1Database) =>
    arm.prepare(`SELECT ${CHAIN_COLUMNS} FROM ${rowsBySeq({ project: "?1", lo: "?2 + 1", hi: "?3", limit: "?4" })}`).bind(deps.projectId, start, headSeq, pageSize).raw();
  const rows = start < headSeq ? mergeBySeq(await overArms(deps.db(), async (arm) => (await page(arm)).map(chainRowOf)), pageSize) : [];
  const problem = start < headSeq ? await firstProblem(rows, start, lastHash) : null;
  const prepared = problem ? null : await log.extend(rows);
  return deps.exclusive(async () => {
    // Single-flight from the alarm; anything else having moved the tree means this page is stale.
    if (log.status !== "building" || log.size !== start) return log.status;
    if (problem) {
      log.setState({ status: "blocked", blocked: problem });
      return log.status;
    }
    const head = deps.head();
    const end = prepared ? rows[rows.length - 1] : { seq: start, hash: lastHash };
    let next: Partial<BuildState> = {};
    if (end.seq === head.seq) {
      next = end.hash === head.hash ? { status: "ready" } : { status: "blocked", blocked: { seq: end.seq, reason: "head_mismatch" } };
    }
    if (prepared) log.apply(prepared, next);
    else log.setState(next);
    return log.status;
  });
}

/**
 * Runs pages until the log is no longer building or the budget is spent, so
 * one alarm stays short and the next one continues.
 */
export async function backfill(log: ProjectLog, deps: BackfillDeps, budgetMs = 2000, pageSize = BACKFILL_PAGE): Promise<BuildState["status"]> {
  const until = Date.now() + budgetMs;
  let status = log.status;
  do status = await backfillStep(log, deps, pageSize);
  while (status === "building" && Date.now() < until);
  return status;
}
