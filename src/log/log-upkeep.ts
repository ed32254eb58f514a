/**
 * The log's background work, run from its ledger's alarm: building the tree
 * of a project that predates it (log-backfill.ts), asking witnesses to
 * cosign (witness-client.ts) and moving old full tiles to R2
 * (tile-offload.ts). One alarm per ledger serves all; scheduleLog only ever
 * moves it earlier. Tiles need no alarm of their own: every commit already
 * has the ledger's alarm ring within a minute (src/storage/archive-upkeep.ts),
 * and each alarm moves a batch; only a backlog of more than a batch (a log
 * from before the move existed) brings the alarm forward.
 */
import { alarmNoLaterThan } from "../lib/alarm.ts";
import { type BackfillDeps, backfill } from "./log-backfill.ts";
import type { ProjectLog } from "./project-log.ts";
import { OFFLOAD_BATCH, offloadTiles, tilesWaiting } from "./tile-offload.ts";
import { type WitnessConfig, cosignRound, nextRoundAt, parseWitnesses } from "./witness-client.ts";

export type UpkeepDeps = BackfillDeps & {
  /** Outbound fetch for witnesses; the tests pass one that reaches a witness they run. */
  fetcher?: typeof fetch;
};

function witnessesOf(env: Env): WitnessConfig[] {
  try {
    return parseWitnesses(env.WITNESSES);
  } catch (err) {
    console.error(`WITNESSES ignored: ${(err as Error).message}`);
    return [];
  }
}

/** Whether commits need to think about the alarm at all (no witnesses: only a backfill does). */
export const hasWitnesses = (env: Env): boolean => (env.WITNESSES ?? "").trim() !== "";

/** When a tile move last failed, per log: a backlog then waits for the next alarm rather than asking for one at once. */
const offloadFailed = new WeakMap<ProjectLog, number>();
const OFFLOAD_RETRY_MS = 60_000;

/** Sets the alarm for the log's next piece of work, unless one is due sooner already. */
export async function scheduleLog(log: ProjectLog, deps: Pick<UpkeepDeps, "storage" | "env">): Promise<void> {
  const now = Date.now();
  const backlog = tilesWaiting(log) >= OFFLOAD_BATCH && now - (offloadFailed.get(log) ?? 0) >= OFFLOAD_RETRY_MS;
  const at = log.status === "building" || backlog ? now : nextRoundAt(log, witnessesOf(deps.env), now);
  if (at === null) return;
  await alarmNoLaterThan(deps.storage, at);
}

/** The alarm's work for the log: a bounded backfill, a witness round if one is due, then a batch of tiles to R2. */
export async function logAlarm(log: ProjectLog, deps: UpkeepDeps): Promise<void> {
  if (log.status === "building") await backfill(log, deps);
  const witnesses = witnessesOf(deps.env);
  const due = log.status === "ready" ? nextRoundAt(log, witnesses, Date.now()) : null;
  if (due !== null && due <= Date.now()) await cosignRound(log, witnesses, deps.fetcher ?? ((input, init) => fetch(input, init)), Date.now());
  if (log.status === "ready") await moveTiles(log, deps.env);
  await scheduleLog(log, deps);
}

/** A batch of old full tiles to R2. Never throws: the ledger's other upkeeps run after this one in the same alarm. */
async function moveTiles(log: ProjectLog, env: Env): Promise<void> {
  try {
    const { moved, waiting } = await offloadTiles(log, env.LOGS);
    if (moved === 0 && waiting > 0) offloadFailed.set(log, Date.now());
    else offloadFailed.delete(log);
  } catch (error) {
    offloadFailed.set(log, Date.now());
    console.error(`log of project ${log.projectId}: moving tiles to R2 failed; the next alarm retries`, error);
  }
}
