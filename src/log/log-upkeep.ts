/**
 * The log's background work, run from its ledger's alarm: building the tree
 * of a project that predates it (log-backfill.ts) and asking witnesses to
 * cosign (witness-client.ts). One alarm per ledger serves both; scheduleLog
 * only ever moves it earlier.
 */
import { alarmNoLaterThan } from "../lib/alarm.ts";
import { type BackfillDeps, backfill } from "./log-backfill.ts";
import type { ProjectLog } from "./project-log.ts";
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

/** Sets the alarm for the log's next piece of work, unless one is due sooner already. */
export async function scheduleLog(log: ProjectLog, deps: Pick<UpkeepDeps, "storage" | "env">): Promise<void> {
  const now = Date.now();
  const at = log.status === "building" ? now : nextRoundAt(log, witnessesOf(deps.env), now);
  if (at === null) return;
  await alarmNoLaterThan(deps.storage, at);
}

/** The alarm's work for the log: a bounded backfill, then a witness round if one is due. */
export async function logAlarm(log: ProjectLog, deps: UpkeepDeps): Promise<void> {
  if (log.status === "building") await backfill(log, deps);
  const witnesses = witnessesOf(deps.env);
  const due = log.status === "ready" ? nextRoundAt(log, witnesses, Date.now()) : null;
  if (due !== null && due <= Date.now()) await cosignRound(log, witnesses, deps.fetcher ?? ((input, init) => fetch(input, init)), Date.now());
  await scheduleLog(log, deps);
}
