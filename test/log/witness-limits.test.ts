/**
 * One witness cannot hold back the others (issue #26, item 7): each answer is
 * bounded in time and size, and each cosignature is stored, and served, as
 * soon as it arrives.
 */
import { exports } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ProjectLedger } from "../../src/durable/project-ledger.do";
import { parseCosignerVkey, validCosignatureLines } from "../../src/tlog/cosignature";
import { parseNote } from "../../src/tlog/note";
import type { ProjectLog } from "../../src/log/project-log";
import { cosignRound, type WitnessConfig } from "../../src/log/witness-client";
import { BASE, call, createProject, ingestMany } from "../helpers";
import { ledger } from "./ledger-log";
import { TestWitness } from "./test-witness";

const GOOD = "good.witness.test";
const BAD = "bad.witness.test";

async function setup() {
  const p = await createProject();
  await ingestMany(p.key, Array.from({ length: 5 }, (_, i) => ({ action: `wl.${i}` })));
  const log = (await call("GET", "/v1/log", { key: p.key })).json.data;
  const good = await TestWitness.create(GOOD, [log.vkey]);
  const configs: WitnessConfig[] = [GOOD, BAD].map((name) => ({ name, vkey: good.vkey, url: `https://${name}/` }));
  return { p, log, good, configs };
}

/** GOOD answers as a witness does; BAD gets `bad`. */
const network = (good: TestWitness, bad: typeof fetch): typeof fetch => async (input, init) => {
  const host = new URL(input instanceof Request ? input.url : String(input)).host;
  return host === GOOD ? good.fetch(input, init) : bad(input, init);
};

function round(projectId: string, configs: WitnessConfig[], fetcher: typeof fetch, limits?: { timeoutMs?: number; maxBodyBytes?: number }) {
  return runInDurableObject(ledger(projectId), (instance: ProjectLedger) =>
    cosignRound((instance as unknown as { log: ProjectLog }).log, configs, fetcher, Date.now(), limits),
  );
}

async function servedCosignatures(logId: string, w: TestWitness): Promise<number> {
  const res = await exports.default.fetch(new Request(`${BASE}/logs/${logId}/checkpoint`, { headers: { "CF-Connecting-IP": "10.8.7.6" } }));
  const note = await res.text();
  const parsed = parseNote(note);
  return (await validCosignatureLines(await parseCosignerVkey(w.vkey), parsed.text, note.slice(parsed.text.length + 1))).length;
}

describe("witness rounds under a misbehaving witness", () => {
  it("one that never answers does not keep another's cosignature from being served, and times out", async () => {
    const { p, log, good, configs } = await setup();
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    // Never answers and ignores the abort signal: only the client's own timer can end the wait.
    const silent: typeof fetch = () => released.then(() => new Response("late\n"));
    const running = round(p.id, configs, network(good, silent), { timeoutMs: 1500 });
    let served = 0;
    for (let i = 0; i < 40 && served === 0; i++) {
      await new Promise((r) => setTimeout(r, 25));
      served = await servedCosignatures(log.log_id, good);
    }
    const during = served;
    const result = await Promise.race([running, new Promise((r) => setTimeout(() => r("still running"), 4000))]);
    release();
    await running;
    expect(during).toBe(1);
    expect(result).toEqual({ [GOOD]: "cosigned", [BAD]: expect.stringMatching(/^error: no answer within 1500 ms/) });
  }, 20_000);

  it("one that answers an endless body is cut off at the cap, and the other's cosignature is served", async () => {
    const { p, log, good, configs } = await setup();
    let pulled = 0;
    const chunk = new Uint8Array(64 * 1024).fill(0x41);
    // 16 MiB, made as it is read: what was pulled is what the client read.
    const huge: typeof fetch = async () =>
      new Response(
        new ReadableStream({
          pull(controller) {
            if (pulled >= 16 * 1024 * 1024) return controller.close();
            pulled += chunk.length;
            controller.enqueue(chunk);
          },
        }),
      );
    const result = await round(p.id, configs, network(good, huge));
    expect(result).toEqual({ [GOOD]: "cosigned", [BAD]: expect.stringMatching(/^error: answer larger than \d+ bytes/) });
    expect(pulled).toBeLessThanOrEqual(256 * 1024);
    expect(await servedCosignatures(log.log_id, good)).toBe(1);
  });
});
