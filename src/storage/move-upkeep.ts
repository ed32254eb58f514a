import { alarmNoLaterThan } from "../lib/alarm";
import { MOVE_STATE_KEY, type MoveProgress, type MoveState } from "./shard-move";

/**
 * Once a move has switched the project to its new shard, the move has
 * happened; what is left is housekeeping: wait out the isolates' shard cache,
 * then delete the old copy. The ledger does that from its own alarm, so the
 * operator's command returns at the switch instead of waiting on it.
 */

/** Deletion steps per alarm: each deletes one batch, a few D1 queries. */
const STEPS_PER_ALARM = 20;

/** After any move step: an alarm for when the drain ends, or at once while deleting. */
export async function scheduleMoveFinish(storage: DurableObjectStorage, progress: MoveProgress, now = Date.now()): Promise<void> {
  if (progress.status === "draining") await alarmNoLaterThan(storage, now + (progress.waitSeconds ?? 0) * 1000 + 250);
  else if (progress.status === "deleting") await alarmNoLaterThan(storage, now);
}

/** The alarm's part: a switched move's next steps (`step` runs one under the ledger's lock). */
export async function moveAlarm(storage: DurableObjectStorage, step: (shard: number) => Promise<MoveProgress>): Promise<void> {
  const state = storage.kv.get<MoveState>(MOVE_STATE_KEY);
  if (!state || (state.phase !== "draining" && state.phase !== "deleting")) return;
  for (let i = 0; i < STEPS_PER_ALARM; i++) {
    const progress = await step(state.to);
    if (progress.status !== "deleting") return scheduleMoveFinish(storage, progress);
  }
  await alarmNoLaterThan(storage, Date.now());
}
