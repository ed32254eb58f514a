import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { purgeRun, retentionAlarm, STEPS_PER_CALL, type PurgeStep } from "../../src/chain/retention-upkeep";
import type { ProjectLedger } from "../../src/durable/project-ledger.do";
import { createProject } from "../helpers";

describe("retention runs in bounded steps", () => {
  it("does at most STEPS_PER_CALL steps a call, keeps the run's clock and cursor, and carries on from the alarm until done", async () => {
    const p = await createProject();
    const stub = env.LEDGER.get(env.LEDGER.idFromName(p.id));
    const calls: Array<[string, number]> = [];
    // A backlog of 27 batches: each step purges one and says where it stopped.
    const step: PurgeStep = async (now, afterSeq) => {
      calls.push([now, afterSeq]);
      return { purged: 500, done: calls.length >= 27, lastSeq: afterSeq + 500 };
    };
    const first = await runInDurableObject(stub, async (_: ProjectLedger, state) => {
      await state.storage.deleteAlarm();
      const result = await purgeRun(state.storage, step, "2030-01-01T00:00:00.000Z");
      const alarm = await state.storage.getAlarm();
      // The test plays that alarm itself, with its own step: the ledger's real one must not run the rest of the backlog meanwhile.
      await state.storage.deleteAlarm();
      return { result, alarm };
    });
    expect(first.result).toEqual({ purged: 500 * STEPS_PER_CALL, done: false });
    expect(calls).toHaveLength(STEPS_PER_CALL);
    expect(first.alarm).not.toBeNull();
    // The alarm's call goes on from the cursor, with the clock the run started with.
    const second = await runInDurableObject(stub, async (_: ProjectLedger, state) => {
      await retentionAlarm(state.storage, step);
      return state.storage.kv.get("retention-run") ?? null;
    });
    expect(second).toBeNull();
    expect(calls).toHaveLength(27);
    expect(calls.map(([, after]) => after)).toEqual(Array.from({ length: 27 }, (_, i) => i * 500));
    expect(new Set(calls.map(([now]) => now))).toEqual(new Set(["2030-01-01T00:00:00.000Z"]));
    // Nothing left: the alarm does nothing more.
    await runInDurableObject(stub, (_: ProjectLedger, state) => retentionAlarm(state.storage, step));
    expect(calls).toHaveLength(27);
  });
});
