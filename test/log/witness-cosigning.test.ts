import { env, exports } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ProjectLedger } from "../../src/durable/project-ledger.do";
import { verifyCheckpoint } from "../../src/tlog/checkpoint";
import { parseCosignerVkey, validCosignatureLines } from "../../src/tlog/cosignature";
import { logAlarm, type UpkeepDeps } from "../../src/log/log-upkeep";
import { parseNote } from "../../src/tlog/note";
import type { ProjectLog } from "../../src/log/project-log";
import { WITNESS_INTERVAL_MS, cosignRound, nextRoundAt, type WitnessConfig } from "../../src/log/witness-client";
import { BASE, call, createProject, ingestMany } from "../helpers";
import { ledger } from "./ledger-log";
import { TestWitness } from "./test-witness";

type Internals = { log: ProjectLog; logDeps(): UpkeepDeps };
const configOf = (w: TestWitness): WitnessConfig => ({ name: w.name, vkey: w.vkey, url: `https://${w.name}/` });

/** Every witness answers at its own URL; anything else is unreachable. */
const network = (witnesses: TestWitness[]): typeof fetch => async (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  const w = witnesses.find((x) => x.name === url.host);
  if (!w) throw new TypeError(`unreachable: ${url.host}`);
  return w.fetch(input, init);
};

function round(projectId: string, witnesses: TestWitness[], configs = witnesses.map(configOf)) {
  return runInDurableObject(ledger(projectId), (instance: ProjectLedger) =>
    cosignRound((instance as unknown as Internals).log, configs, network(witnesses), Date.now()),
  );
}

async function servedCheckpoint(logId: string): Promise<string> {
  const res = await exports.default.fetch(new Request(`${BASE}/logs/${logId}/checkpoint`, { headers: { "CF-Connecting-IP": "10.8.8.8" } }));
  return res.text();
}

/** The witness's valid cosignatures on a served checkpoint note. */
async function cosignedBy(note: string, w: TestWitness): Promise<number> {
  const parsed = parseNote(note);
  const lines = note.slice(parsed.text.length + 1);
  return (await validCosignatureLines(await parseCosignerVkey(w.vkey), parsed.text, lines)).length;
}

async function setup(events: number, names = ["w1.witness.test"]) {
  const p = await createProject();
  await ingestMany(p.key, Array.from({ length: events }, (_, i) => ({ action: `w.${i}` })));
  const log = (await call("GET", "/v1/log", { key: p.key })).json.data;
  const witnesses = await Promise.all(names.map((n) => TestWitness.create(n, [log.vkey])));
  return { p, log, witnesses };
}

describe("witness cosigning (C2SP tlog-witness)", () => {
  it("submits checkpoints with consistency proofs and serves the cosignatures it got", async () => {
    const { p, log, witnesses } = await setup(5, ["w1.witness.test", "w2.witness.test"]);
    expect(await round(p.id, witnesses)).toEqual({ "w1.witness.test": "cosigned", "w2.witness.test": "cosigned" });
    expect(witnesses[0].requests[0]).toMatch(/^old 0\n\n/);
    let note = await servedCheckpoint(log.log_id);
    expect(await cosignedBy(note, witnesses[0])).toBe(1);
    expect(await cosignedBy(note, witnesses[1])).toBe(1);
    // The log's own signature still verifies; cosignatures are ignored by a log-key check.
    expect((await verifyCheckpoint(note, log.vkey)).ok).toBe(true);
    expect(await round(p.id, witnesses)).toEqual({ "w1.witness.test": "unchanged", "w2.witness.test": "unchanged" });

    // Growth: the new checkpoint has none until the next round, which sends a proof from 5.
    await ingestMany(p.key, Array.from({ length: 300 }, (_, i) => ({ action: `x.${i}` })));
    note = await servedCheckpoint(log.log_id);
    expect(await cosignedBy(note, witnesses[0])).toBe(0);
    expect(await round(p.id, witnesses)).toEqual({ "w1.witness.test": "cosigned", "w2.witness.test": "cosigned" });
    expect(witnesses[0].requests.at(-1)).toMatch(/^old 5\n[A-Za-z0-9+/=]{44}\n/);
    note = await servedCheckpoint(log.log_id);
    expect(await cosignedBy(note, witnesses[0])).toBe(1);
    expect((await call("GET", "/v1/log", { key: p.key })).json.data.checkpoint).toBe(note);
  });

  it("resyncs on 409 to the size the witness has, and refuses to go back past it", async () => {
    const { p, witnesses } = await setup(8);
    const [w] = witnesses;
    // The witness cosigned size 8 before and the log lost that state: 409 says 8, the retry proves 8 -> 9.
    expect(await round(p.id, witnesses)).toEqual({ [w.name]: "cosigned" });
    await runInDurableObject(ledger(p.id), (_i, state) => state.storage.kv.delete("log:witness_sizes"));
    await ingestMany(p.key, [{ action: "y" }]);
    expect(await round(p.id, witnesses)).toEqual({ [w.name]: "cosigned" });
    const [, conflicted, retried] = w.requests;
    expect(conflicted).toMatch(/^old 0\n\n/);
    expect(retried).toMatch(/^old 8\n/);
    // A witness that saw a larger tree for this log than the log now has: a fork or rollback, reported.
    const origin = [...w.latest.keys()][0];
    w.latest.set(origin, { size: 1000, root: new Uint8Array(32) });
    await runInDurableObject(ledger(p.id), (_i, state) => state.storage.kv.delete("log:witness_sizes"));
    await ingestMany(p.key, [{ action: "z" }]);
    expect((await round(p.id, witnesses))[w.name]).toMatch(/^error: witness has size 1000, larger than ours/);
  });

  it("ignores answers that are not valid cosignatures, and survives unreachable witnesses", async () => {
    const { p, log, witnesses } = await setup(3);
    const impostor = await TestWitness.create("w1.witness.test", [log.vkey]);
    // Configured with the real witness's key, answered by another key of the same name.
    const result = await round(p.id, [impostor], [configOf(witnesses[0])]);
    expect(result).toEqual({ [witnesses[0].name]: "error: no valid cosignature in the answer" });
    const down = await round(p.id, [], [{ name: "down.witness.test", vkey: witnesses[0].vkey, url: "https://down.witness.test" }]);
    expect(down["down.witness.test"]).toMatch(/^error: unreachable/);
    expect(await cosignedBy(await servedCheckpoint(log.log_id), witnesses[0])).toBe(0);
  });

  it("is rate-bounded and runs from the ledger's alarm when WITNESSES is set", async () => {
    const { p, log, witnesses } = await setup(4);
    const configs = witnesses.map(configOf);
    const run = () =>
      runInDurableObject(ledger(p.id), async (instance: ProjectLedger) => {
        const i = instance as unknown as Internals;
        const deps = { ...i.logDeps(), env: { ...env, WITNESSES: JSON.stringify(configs) }, fetcher: network(witnesses) };
        await logAlarm(i.log, deps);
        return nextRoundAt(i.log, configs, Date.now());
      });
    expect(await run()).toBeNull(); // cosigned; nothing due
    expect(await cosignedBy(await servedCheckpoint(log.log_id), witnesses[0])).toBe(1);
    await ingestMany(p.key, [{ action: "more" }]);
    const due = await run(); // the last round was just now: the next waits for the interval
    expect(due).toBeGreaterThan(Date.now() + WITNESS_INTERVAL_MS - 2000);
    expect(witnesses[0].requests).toHaveLength(1);
  });
});
