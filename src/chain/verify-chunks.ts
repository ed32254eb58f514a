/**
 * Verify that scales out: a project's history split into seq ranges
 * (chunks), each checked on its own in its own invocation (a VerifyChunk
 * Durable Object call, or a Workflow step), and merged by a coordinator that
 * links the chunks' edges and checks the chain's end against the ledger.
 * The answer is verifyChain's, row for row: same counts, same first failure.
 */
import { CHAIN_START, checkLink, type LedgerView, type LinkStart } from "./chain-check";
import { gapsEndingAt } from "./gap-records";
import { ledgerOf } from "./ledger";
import { loadKeyring } from "../sealing/signing-keys";
import { checkEnd, type GapReport, type VerifyResult, type VerifyWindow } from "./verify";
import { emptyResult, gapReport, walkRange, type EdgeRow } from "./verify-range";
import { treeExtends, type VerifyCheckpoint } from "./verify-checkpoint";
import { archiveTier } from "../storage/archive-walk";
import { projectShard, shardDb } from "../storage/shards";

/**
 * Events per chunk. A chunk reads 10 D1 pages (plus 10 archive segments when
 * cold): about 30 D1 queries and 60 subrequests, far inside one invocation's
 * 1,000 and 10,000, and a few seconds of CPU.
 */
export const CHUNK_EVENTS = 20_000;
export const PARALLEL_CHUNKS = 8;
export const MAX_PARALLEL_CHUNKS = 64;

/** VERIFY_PARALLELISM (wrangler.toml), or PARALLEL_CHUNKS when unset or not a whole number in 1..64. */
export function verifyParallelism(env: Pick<Env, "VERIFY_PARALLELISM">): number {
  const n = Number(env.VERIFY_PARALLELISM);
  if (Number.isInteger(n) && n >= 1 && n <= MAX_PARALLEL_CHUNKS) return n;
  if (env.VERIFY_PARALLELISM) console.warn(`VERIFY_PARALLELISM=${env.VERIFY_PARALLELISM} is not a whole number from 1 to ${MAX_PARALLEL_CHUNKS}; using ${PARALLEL_CHUNKS}`);
  return PARALLEL_CHUNKS;
}
/**
 * Chunks in one plan at most: past CHUNK_EVENTS x MAX_CHUNKS (40M events) chunks grow
 * instead (500k events at 1B, still a few hundred D1 queries and seconds of CPU each),
 * so a plan stays far under what a Workflow step may return (1 MiB) and a job under its
 * steps (25,000), and GET /v1/events/verify's coordinator under 10,000 subrequests.
 */
export const MAX_CHUNKS = 2_000;

export interface VerifyPlan {
  /** Names this run (a chunk's object is addressed per run and index). */
  id: string;
  projectId: string;
  window: VerifyWindow;
  head: { seq: number; hash: string | null };
  chunks: Array<{ after: number; through: number }>;
  /** Where the rows were when planned: every chunk reads the same shard. */
  shard: number;
  signedFrom: number;
  checkpoint: { tree_size: number; root_hash: string; tiles_match_root: boolean };
  /** An incremental verify's starting point (only rows after since.seq are planned). */
  since: VerifyCheckpoint | null;
}

/** One chunk's answer: small and JSON-serializable (a Workflow step returns it). */
export interface ChunkResult {
  /** Its first and last rows walked (null: no row in its range), for the links at its edges. */
  first: EdgeRow | null;
  last: EdgeRow | null;
  verified: number;
  anonymized: number;
  unsigned: number;
  restored_surrogates: number;
  gaps: GapReport[];
  /** Its first bad row; the rows after it were not checked. */
  failure: VerifyResult["failure"];
}

export async function planVerify(
  env: Env,
  projectId: string,
  window: VerifyWindow,
  options: { chunkEvents?: number; maxChunks?: number; since?: VerifyCheckpoint | null } = {},
): Promise<VerifyPlan> {
  const least = options.chunkEvents ?? CHUNK_EVENTS;
  if (!Number.isSafeInteger(least) || least < 1) throw new RangeError(`chunkEvents must be a positive integer, not ${least}`);
  const shard = await projectShard(env, projectId);
  if (shard === null) throw new Error(`Unknown project ${projectId}`);
  const ledger = ledgerOf(env, projectId);
  const [anchor, checkpoint] = await Promise.all([ledger.anchor(), ledger.checkpointAnchor(true)]);
  // A window checks rows wherever they are; a checkpoint past the head is no checkpoint of this chain.
  const windowed = window.from !== null || window.to !== null;
  const since = options.since && !windowed && options.since.seq <= anchor.seq ? options.since : null;
  const chunks: VerifyPlan["chunks"] = [];
  const start = since?.seq ?? 0;
  const size = Math.max(least, Math.ceil((anchor.seq - start) / (options.maxChunks ?? MAX_CHUNKS)));
  for (let after = start; after < anchor.seq; after += size) chunks.push({ after, through: Math.min(after + size, anchor.seq) });
  const head = { seq: anchor.seq, hash: anchor.hash };
  return { id: crypto.randomUUID(), projectId, window, head, chunks, shard, signedFrom: anchor.signedFrom, checkpoint, since };
}

/** The ledger as a chunk consults it: the plan's anchor, and the ledger's erasure records and leaves asked live. */
function viewOf(env: Env, plan: VerifyPlan, db: D1Database): LedgerView {
  const ledger = ledgerOf(env, plan.projectId);
  return {
    ...plan.head,
    signedFrom: plan.signedFrom,
    checkpoint: plan.checkpoint,
    archive: archiveTier(env, db, plan.projectId),
    committedHead: () => ledger.committedHead(),
    erasedAt: (seqs) => ledger.erasedAt(seqs),
    leavesAt: (indexes) => ledger.leavesAt(indexes),
  };
}

export async function checkChunk(env: Env, plan: VerifyPlan, index: number): Promise<ChunkResult> {
  const range = plan.chunks[index];
  if (!range) throw new RangeError(`No chunk ${index} in a plan of ${plan.chunks.length}`);
  const db = shardDb(env, plan.shard);
  const ring = await loadKeyring(env.SIGNING_KEYS);
  const { result, first, last } = await walkRange(db, ring, plan.projectId, plan.window, viewOf(env, plan, db), range);
  const { verified, anonymized, unsigned, restored_surrogates, gaps, failure } = result;
  return { first, last, verified, anonymized, unsigned, restored_surrogates, gaps, failure };
}

/**
 * The chunks' results put together in seq order: each chunk's first row
 * linked to the last row before it (or across an authentic gap record), the
 * first failure reported with the counts up to it, then the chain's end
 * checked against the ledger's head. `results[i]` answers `plan.chunks[i]`;
 * results after a failed chunk may be missing (they are never read).
 * A whole-history verify that comes out ok leaves a checkpoint with the ledger.
 */
export async function mergeChunks(env: Env, plan: VerifyPlan, results: ChunkResult[]): Promise<VerifyResult> {
  const db = shardDb(env, plan.shard);
  const view = viewOf(env, plan, db);
  const ledger = ledgerOf(env, plan.projectId);
  const windowed = plan.window.from !== null || plan.window.to !== null;
  let result = emptyResult(view);
  const fail = (failure: NonNullable<VerifyResult["failure"]>): VerifyResult => ({ ...result, ok: false, failure });
  if (!plan.checkpoint.tiles_match_root) return fail({ event_id: null, reason: "leaf_mismatch", at: null });
  const since = plan.since;
  if (since) {
    // The leaves the earlier verify checked rows against must still be the start of today's tree.
    if (!(await treeExtends(since, plan.checkpoint, (from, to) => ledger.logConsistency(from, to)))) return fail({ event_id: null, reason: "leaf_mismatch", at: null });
    const { verified, anonymized, unsigned, restored_surrogates } = since;
    result = { ...result, verified, anonymized, unsigned, restored_surrogates, purged_before_checkpoint: since.purged ?? null };
  }

  const ring = await loadKeyring(env.SIGNING_KEYS);
  const edges = windowed ? [] : edgeLinks(plan, results, since ? { seq: since.seq, hash: since.hash } : CHAIN_START);
  // Every gap record an edge may need, in one query.
  const holes = edges.flatMap(({ start, end }) => (end.seq !== start.seq + 1 && end.prev_hash !== null ? [end.prev_hash] : []));
  const gaps = await gapsEndingAt(db, plan.projectId, holes);
  let last: EdgeRow | null = null;
  for (let i = 0; i < plan.chunks.length; i++) {
    const chunk = results[i];
    if (!chunk) throw new Error(`Chunk ${i} of verify ${plan.id} has no result`);
    const edge = edges.find((e) => e.index === i);
    if (edge) {
      const link = await checkLink(ring, edge.start, edge.end, async (hash) => gaps.get(hash) ?? []);
      if (!link.ok) return fail({ event_id: edge.end.id, reason: "chain_broken", at: edge.end.occurred_at });
      if (link.gap) result.gaps.push(gapReport(link.gap));
    }
    result = {
      ...result,
      verified: result.verified + chunk.verified,
      anonymized: result.anonymized + chunk.anonymized,
      unsigned: result.unsigned + chunk.unsigned,
      restored_surrogates: result.restored_surrogates + chunk.restored_surrogates,
      gaps: [...result.gaps, ...chunk.gaps],
    };
    if (chunk.failure) return fail(chunk.failure);
    last = chunk.last ?? last;
  }
  const end = last ?? (since ? { seq: since.seq, hash: since.hash, id: null, occurred_at: null } : null);
  result = await checkEnd(db, ring, plan.projectId, plan.window, view, end, result);
  if (result.ok && !windowed && plan.checkpoint.tree_size >= plan.head.seq) {
    const gapCount = (since?.gaps ?? 0) + result.gaps.length;
    const purgedSince = result.gaps.reduce((sum, g) => sum + g.purged_count, 0);
    // Unknown when the earlier checkpoint did not count it: never a guess.
    const purged = since && since.purged === undefined ? undefined : (since?.purged ?? 0) + purgedSince;
    const { verified, anonymized, unsigned, restored_surrogates } = result;
    const { tree_size, root_hash } = plan.checkpoint;
    const checkpoint = {
      ...plan.head, tree_size, root_hash, verified, anonymized, unsigned, restored_surrogates, gaps: gapCount,
      ...(purged === undefined ? {} : { purged }),
      at: new Date().toISOString(),
    };
    await ledger.recordVerifyCheckpoint(checkpoint);
  }
  return result;
}

/**
 * The links the chunks left to the coordinator: each chunk's first row (not
 * the chain's first chunk, which linked it to the chain start itself) to the
 * last row walked before it, across any chunks with no rows. Stops at the
 * first failed chunk: nothing after it is reported.
 */
function edgeLinks(plan: VerifyPlan, results: ChunkResult[], start: LinkStart) {
  const edges: Array<{ index: number; start: LinkStart; end: EdgeRow }> = [];
  for (let i = 0; i < plan.chunks.length && results[i]; i++) {
    const { first, last, failure } = results[i];
    if (first && plan.chunks[i].after > 0) edges.push({ index: i, start, end: first });
    if (failure) break;
    if (last) start = last;
  }
  return edges;
}
