import { copyArchiveIds, copyEvents, copyGaps, copyKeys, copyKeysSince, CopyMismatchError, deleteBatch, rowCounts } from "./shard-copy";
import { recordFreed } from "./shard-pressure";
import { copyRecords, deleteRecords } from "./shard-copy-records";
import { eventsDb, forgetShard, rememberShard, SHARD_CACHE_SECONDS, shardDb, UnknownShardError } from "./shards";
import { PLACE_KEY_SQL } from "../model/row-keys";
import type { LedgerHost } from "./ledger-host";

/**
 * Moving a project to another event shard, online, driven by its ledger (the
 * only writer of its events) one bounded step per call. Each step runs under
 * the ledger's commit lock, so it never interleaves with an append, an
 * erasure or a purge, and appends wait for one batch at most. Progress is
 * kept in the ledger's storage after each step; every step is idempotent, so
 * a crash anywhere resumes at the next call. Phases:
 *
 *   clearing  - the target's rows of this project (an earlier, crashed move) are deleted
 *   copying   - gap records, idempotency keys, archived-id index, then events by seq, each batch checked
 *               row by row against the source; when the copy reaches the head, the
 *               same step copies the tail, compares counts and switches the directory
 *   draining  - other isolates may still read the source for SHARD_CACHE_SECONDS;
 *               the source rows stay until then
 *   deleting  - the source rows go, in batches; then the move is done
 *
 * Only an operator starts a move: it writes projects.move_to in the control
 * database (npm run projects:move), which the project's API key cannot.
 */

export const MOVE_STATE_KEY = "move";

export interface MoveState {
  from: number;
  to: number;
  phase: "clearing" | "copying" | "draining" | "deleting";
  startedAt: string;
  gapsCopied: boolean;
  /** Key-order cursor of the idempotency keys; null once all were copied. */
  keysAfter: string | null;
  /** Seq cursor of the archived-id index (archive-ids.ts); null once all were copied. Absent in moves begun before it existed: 0. */
  idsAfter?: number | null;
  copiedThrough: number;
  switchedAt: number | null;
}

export type MoveStatus = MoveState["phase"] | "done" | "not_requested" | "unknown_shard" | "busy";

export interface MoveProgress {
  status: MoveStatus;
  from: number;
  to: number;
  copiedThrough: number;
  head: number;
  /** draining: seconds until the source rows may be deleted. */
  waitSeconds?: number;
  /** This step switched the project to the target shard: the move has happened (the rest is deleting the old copy). */
  switched?: true;
  message?: string;
}

/** Test hooks: injected crashes and a shorter drain. Not reachable over HTTP. */
export interface MoveHooks {
  crashAt?: "copy" | "switch" | "delete";
  drainSeconds?: number;
}

/** What the ledger lends a step: its storage, its head and the switch of its own database. */
/** The ledger a move step runs in (./ledger-host.ts); switchTo points it at the shard the project now lives on. */
export type MoveHost = LedgerHost & {
  switchTo(db: D1Database): void;
};

class InjectedCrash extends Error {}

/** One bounded step of the move to `shard`. Call it under the ledger's commit lock. */
export async function moveStep(host: MoveHost, shard: number, hooks: MoveHooks = {}): Promise<MoveProgress> {
  try {
    return await step(host, shard, hooks);
  } catch (error) {
    // The directory may have switched even though its answer was lost: write where it says.
    forgetShard(host.projectId);
    host.switchTo(await eventsDb(host.env, host.projectId));
    throw error;
  }
}

async function step(host: MoveHost, shard: number, hooks: MoveHooks): Promise<MoveProgress> {
  const { env, projectId } = host;
  const kv = host.storage.kv;
  const dir = await env.DB.prepare("SELECT shard, move_to FROM projects WHERE id = ?").bind(projectId).first<{ shard: number; move_to: number | null }>();
  const head = host.head().seq;
  let state = kv.get<MoveState>(MOVE_STATE_KEY) ?? null;
  const wasSwitched = state?.switchedAt != null;
  const report = (status: MoveStatus, extra: Partial<MoveProgress> = {}): MoveProgress => ({
    status, from: state?.from ?? dir?.shard ?? shard, to: shard, copiedThrough: state?.copiedThrough ?? 0, head, ...extra,
    ...(!wasSwitched && state?.switchedAt != null ? { switched: true as const } : {}),
  });
  if (!dir) return report("not_requested", { message: `no project ${projectId}` });
  if (state && state.to !== shard) return report("busy", { message: `a move to shard ${state.to} is under way; finish it first` });
  if (!state) {
    // Already there (the ledger may have finished the move from its alarm between two calls): done, nothing to do.
    if (dir.shard === shard) {
      if (dir.move_to === shard) await env.DB.prepare("UPDATE projects SET move_to = NULL WHERE id = ? AND move_to = ?").bind(projectId, shard).run();
      return report("done", { message: `on shard ${shard}` });
    }
    if (dir.move_to !== shard) return report("not_requested", { message: `no move of this project to shard ${shard} was requested (npm run projects:move)` });
    try {
      shardDb(env, shard);
    } catch (error) {
      if (error instanceof UnknownShardError) return report("unknown_shard", { message: error.message });
      throw error;
    }
    state = { from: dir.shard, to: shard, phase: "clearing", startedAt: new Date().toISOString(), gapsCopied: false, keysAfter: "", idsAfter: 0, copiedThrough: 0, switchedAt: null };
    kv.put(MOVE_STATE_KEY, state);
  }
  const s: MoveState = state;
  const from = shardDb(env, s.from);
  const to = shardDb(env, s.to);
  const save = () => kv.put(MOVE_STATE_KEY, s);
  const crash = (at: MoveHooks["crashAt"]) => {
    if (hooks.crashAt === at) throw new InjectedCrash(`injected crash at ${at}`);
  };

  // The directory switched but the step crashed before recording it: the copy was complete and checked.
  if ((s.phase === "clearing" || s.phase === "copying") && dir.shard === s.to) {
    Object.assign(s, { phase: "draining", switchedAt: Date.now() });
    host.switchTo(to);
    save();
  }

  if (s.phase === "clearing") {
    if ((await deleteBatch(to, projectId)).rows === 0) {
      // The target holds none of its rows: the project gets its number there, and every row it copies is keyed
      // (model/row-keys.ts). A move is how a project made before keys comes to them.
      await to.prepare(PLACE_KEY_SQL).bind(projectId).run();
      s.phase = "copying";
    }
    save();
    return report(s.phase);
  }

  if (s.phase === "copying") {
    if (!s.gapsCopied) {
      await copyGaps(from, to, projectId);
      s.gapsCopied = true;
    } else if (s.keysAfter !== null) {
      s.keysAfter = await copyKeys(from, to, projectId, s.keysAfter);
    } else if (s.idsAfter !== null) {
      s.idsAfter = await copyArchiveIds(from, to, projectId, s.idsAfter ?? 0);
    } else if (s.copiedThrough < head) {
      const { lastSeq } = await copyEvents(from, to, projectId, s.copiedThrough, undefined, () => crash("copy"));
      // Retention may have left no rows up to the head: then the copy is through it.
      s.copiedThrough = lastSeq === s.copiedThrough ? head : lastSeq;
    }
    if (s.gapsCopied && s.keysAfter === null && s.idsAfter === null && s.copiedThrough >= head) await finishCopy(host, s, from, to, crash);
    save();
    const switched = s.switchedAt !== null;
    return report(s.phase, switched ? { waitSeconds: drainLeft(s, hooks) } : {});
  }

  if (s.phase === "draining") {
    const wait = drainLeft(s, hooks);
    if (wait > 0) return report("draining", { waitSeconds: wait });
    s.phase = "deleting";
    save();
  }

  // deleting: never the shard the ledger writes to, whatever the stored state says.
  if (s.from === dir.shard) throw new Error(`refusing to delete from shard ${s.from}: the directory still names it`);
  const batch = await deleteBatch(from, projectId);
  await recordFreed(env, s.from, batch.freedBytes);
  const deleted = batch.rows + (await deleteRecords(from, projectId));
  crash("delete");
  if (deleted > 0) return report("deleting");
  await env.DB.prepare("UPDATE projects SET move_to = NULL WHERE id = ? AND move_to = ?").bind(projectId, s.to).run();
  kv.delete(MOVE_STATE_KEY);
  return report("done", { message: `moved from shard ${s.from} to shard ${s.to}` });
}

/** Whole seconds until no isolate can still route a read to the source (their shard cache expired). */
function drainLeft(s: MoveState, hooks: MoveHooks): number {
  return Math.max(0, Math.ceil((s.switchedAt! + (hooks.drainSeconds ?? SHARD_CACHE_SECONDS + 5) * 1000 - Date.now()) / 1000));
}

/**
 * The only part that is not bounded by a batch: the tail (keys stored since
 * the move began; events were already copied up to the head), the counts,
 * and the switch. Runs within the same locked step, so no append comes between
 * the check and the switch.
 */
async function finishCopy(host: MoveHost, s: MoveState, from: D1Database, to: D1Database, crash: (at: MoveHooks["crashAt"]) => void) {
  await copyKeysSince(from, to, host.projectId, s.startedAt);
  const [a, b] = await Promise.all([rowCounts(from, host.projectId), rowCounts(to, host.projectId)]);
  if (a.events !== b.events) throw new CopyMismatchError(`${a.events} events on the source, ${b.events} on the target`);
  if (a.gaps !== b.gaps) throw new CopyMismatchError(`${a.gaps} gap records on the source, ${b.gaps} on the target`);
  if (a.segments !== b.segments) throw new CopyMismatchError(`${a.segments} archive segments on the source, ${b.segments} on the target`);
  if (a.archivedIds !== b.archivedIds) throw new CopyMismatchError(`${a.archivedIds} archived ids on the source, ${b.archivedIds} on the target`);
  // The source's daily cron may expire keys after they were copied: the target may hold more, never fewer.
  if (b.keys < a.keys) throw new CopyMismatchError(`${a.keys} idempotency keys on the source, ${b.keys} on the target`);
  await copyRecords(from, to, host.projectId);
  await host.env.DB.prepare("UPDATE projects SET shard = ? WHERE id = ? AND shard = ?").bind(s.to, host.projectId, s.from).run();
  forgetShard(host.projectId);
  rememberShard(host.projectId, s.to);
  crash("switch");
  host.switchTo(to);
  Object.assign(s, { phase: "draining", switchedAt: Date.now() });
}

/** An erasure rewrote rows that may already be copied: copy them again (a re-copy replaces, never duplicates). */
export function restartCopy(kv: SyncKvStorage): void {
  const s = kv.get<MoveState>(MOVE_STATE_KEY);
  if (s && (s.phase === "clearing" || s.phase === "copying")) kv.put(MOVE_STATE_KEY, { ...s, gapsCopied: false, copiedThrough: 0 });
}

/** Whether a move is copying: purges wait, so the source's rows and gap records stay what was copied. */
export function moveCopying(kv: SyncKvStorage): boolean {
  const s = kv.get<MoveState>(MOVE_STATE_KEY);
  return s !== undefined && (s.phase === "clearing" || s.phase === "copying");
}
