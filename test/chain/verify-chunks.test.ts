/**
 * Issue 21, item 3: verify split into chunks, each its own invocation (a
 * VerifyChunk object), merged by a coordinator. It must answer exactly what
 * one walk answers, wherever the chunk edges fall.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import { loadKeyring } from "../../src/sealing/signing-keys";
import { verifyLive, type VerifyWindow } from "../../src/chain/verify";
import { PARALLEL_CHUNKS, planVerify, verifyParallelism } from "../../src/chain/verify-chunks";
import { verifyChunked } from "../../src/chain/verify-run";
import { meterReport, resetMeterReport, LIMITS } from "../../src/lib/meter";
import { rewriteEvents } from "../log/ledger-log";
import { archiveAll, segmentsOf } from "../storage/archive-helpers";
import { waitForJob } from "../jobs/job-helpers";
import { call, createProject, dbOf, ingestMany } from "../helpers";

const OPEN: VerifyWindow = { from: null, to: null };
const events = (n: number, at: (i: number) => string | undefined = () => undefined) =>
  Array.from({ length: n }, (_, i) => ({ action: "doc.edited", actor: { id: `u_${i % 7}`, name: "Ada" }, metadata: { i }, occurred_at: at(i) }));

async function project(n: number, at?: (i: number) => string | undefined) {
  const p = await createProject();
  await ingestMany(p.key, events(n, at));
  return { ...p, db: await dbOf(p.id) };
}

/** The one walk verify ran before chunks (verifyLive), as the reference. */
async function oneWalk(projectId: string) {
  return verifyLive(env, await loadKeyring(env.SIGNING_KEYS), projectId, OPEN);
}
const chunked = (projectId: string, chunkEvents: number) => verifyChunked(env, projectId, OPEN, { chunkEvents, parallel: 3 });
const rowAt = (db: D1Database, projectId: string, seq: number) =>
  db.prepare("SELECT id, occurred_at FROM events WHERE project_id = ? AND seq = ?").bind(projectId, seq).first<{ id: string; occurred_at: string }>();

describe("chunked verify", () => {
  it("checks a chunk in the coordinator when its objects fail twice, and still answers the result (never a 500)", async () => {
    const p = await project(1_200);
    const broken = { get: () => ({ check: async () => Promise.reject(new Error("Durable Object reset")) }), idFromName: (n: string) => n };
    const failing = new Proxy(env, { get: (target, key) => (key === "VERIFY_CHUNK" ? broken : Reflect.get(target, key)) }) as Env;
    const result = await verifyChunked(failing, p.id, OPEN, { chunkEvents: 500, parallel: 2 });
    expect(result).toMatchObject({ ok: true, verified: 1_200, failure: null });
    expect(result).toEqual(await oneWalk(p.id));
  }, 60_000);

  it("answers what one walk answers for a clean project in several chunks", async () => {
    const p = await project(3_000);
    const plan = await planVerify(env, p.id, OPEN, { chunkEvents: 500 });
    expect(plan.chunks).toHaveLength(6);
    expect(plan.chunks[5]).toEqual({ after: 2_500, through: 3_000 });
    // Past maxChunks chunks of the least size, chunks grow instead: a plan of 1B events stays 2,000 chunks.
    const capped = await planVerify(env, p.id, OPEN, { chunkEvents: 500, maxChunks: 4 });
    expect(capped.chunks).toEqual([{ after: 0, through: 750 }, { after: 750, through: 1_500 }, { after: 1_500, through: 2_250 }, { after: 2_250, through: 3_000 }]);
    const result = await chunked(p.id, 500);
    expect(result).toMatchObject({ ok: true, verified: 3_000, failure: null });
    expect(result).toEqual(await oneWalk(p.id));
  }, 60_000);

  // Each tampering placed at a chunk edge (chunks of 500: edges after 500 and 1000).
  const cases: Array<[string, (p: { id: string; db: D1Database }) => Promise<unknown>, number, string]> = [
    ["a row deleted as the first of a chunk", (p) => p.db.prepare("DELETE FROM events WHERE project_id = ? AND seq = 501").bind(p.id).run(), 502, "chain_broken"],
    ["a row deleted as the last of a chunk", (p) => p.db.prepare("DELETE FROM events WHERE project_id = ? AND seq = 1000").bind(p.id).run(), 1001, "chain_broken"],
    ["a row edited as the first of a chunk", (p) => p.db.prepare("UPDATE events SET action = 'x' WHERE project_id = ? AND seq = 501").bind(p.id).run(), 501, "hash_mismatch"],
    ["a hash rewritten as the last of a chunk", (p) => p.db.prepare("UPDATE events SET hash = ? WHERE project_id = ? AND seq = 500").bind("a".repeat(64), p.id).run(), 500, "hash_mismatch"],
    ["a signature stripped as the first of a chunk", (p) => p.db.prepare("UPDATE events SET signature = NULL WHERE project_id = ? AND seq = 1001").bind(p.id).run(), 1001, "signature_mismatch"],
    ["a row re-signed with the real key from the first of a chunk on", (p) => rewriteEvents(p.db, p.id, 501, 1100), 501, "leaf_mismatch"],
  ];
  it.each(cases)("names the same event and reason as one walk: %s", async (_name, tamper, seq, reason) => {
    const p = await project(1_100);
    const row = (await rowAt(p.db, p.id, seq))!;
    await tamper(p);
    const reference = await oneWalk(p.id);
    expect(reference.failure).toEqual({ event_id: row.id, reason, at: row.occurred_at });
    expect(await chunked(p.id, 500)).toEqual(reference);
  }, 30_000);

  it("puts archived rows back when a chunk edge falls inside a segment, and reports a damaged one as one walk does", async () => {
    const p = await project(1_100);
    await archiveAll(p.id, 300);
    const segments = await segmentsOf(p.db, p.id);
    // Edges after 500 and 1000 fall inside the segments 301..600 and 901..1200.
    expect(segments.some((s) => s.first_seq <= 500 && s.last_seq > 500)).toBe(true);
    expect(await chunked(p.id, 500)).toEqual(await oneWalk(p.id));
    expect(await chunked(p.id, 500)).toMatchObject({ ok: true, verified: 1_100 });

    const straddling = segments.find((s) => s.first_seq <= 500 && s.last_seq > 500)!;
    await env.ARCHIVE.delete(straddling.object_key);
    const reference = await oneWalk(p.id);
    expect(reference.failure?.reason).toBe("archive_damaged");
    expect(await chunked(p.id, 500)).toEqual(reference);
  }, 60_000);

  it("links chunks across a retention gap that holds a chunk edge and a whole chunk", async () => {
    const OLD = "2020-01-01T00:00:00.000Z";
    // seqs 401..700 are old: purged into one gap; chunks of 100 put edges at 500, 600 and 700 inside it.
    const p = await project(1_000, (i) => (i >= 400 && i < 700 ? OLD : undefined));
    expect((await call("PUT", "/v1/retention", { key: p.key, body: { rules: [{ pattern: "*", days: 30 }] } })).status).toBe(200);
    const ledger = ledgerOf(env, p.id);
    for (let after = 0, i = 0; i < 50; i++) {
      const step = await ledger.purgeExpired(new Date().toISOString(), after);
      if (step.done) break;
      after = step.lastSeq;
    }
    const left = await p.db.prepare("SELECT count(*) AS n FROM events WHERE project_id = ? AND seq BETWEEN 401 AND 700").bind(p.id).first<{ n: number }>();
    expect(left!.n).toBe(0);
    const reference = await oneWalk(p.id);
    expect(reference).toMatchObject({ ok: true, gaps: [{ first_seq: 401, last_seq: 700 }] });
    expect(await chunked(p.id, 100)).toEqual(reference);
    // A deletion next to the gap is still caught at the same row.
    const row = (await rowAt(p.db, p.id, 702))!;
    await p.db.prepare("DELETE FROM events WHERE project_id = ? AND seq = 701").bind(p.id).run();
    expect((await chunked(p.id, 100)).failure).toEqual({ event_id: row.id, reason: "chain_broken", at: row.occurred_at });
  }, 60_000);

  it("runs each chunk as its own invocation, inside the meter's limits, with a cost per chunk that does not grow with the project", async () => {
    const p = await project(3_000);
    resetMeterReport();
    expect(await chunked(p.id, 1_000)).toMatchObject({ ok: true, verified: 3_000 });
    const small = meterReport().find((r) => r.invocation === "VerifyChunk.check");
    resetMeterReport();
    expect(await chunked(p.id, 3_000)).toMatchObject({ ok: true, verified: 3_000 });
    const large = meterReport().find((r) => r.invocation === "VerifyChunk.check");
    expect(small, JSON.stringify(meterReport())).toBeDefined();
    // One D1 page of 2,000 rows costs: the page's query, its leaves and (with holes) gap records.
    // Measured: 3 queries and 4-5 subrequests for 1,000 and for 3,000 rows. A chunk pays one query and one
    // leavesAt call per page of 2,000 rows, plus a few per chunk (the archive index, gap records), so the
    // default chunk of 20,000 costs about 15 queries and 30 subrequests (and its 10 segments when archived).
    expect(small!.d1Queries).toBeLessThanOrEqual(5);
    expect(large!.d1Queries).toBeLessThanOrEqual(small!.d1Queries + 2);
    expect(large!.subrequests).toBeLessThan(LIMITS.subrequests / 100);
    // The request only coordinates: a handful of queries however many chunks ran.
    resetMeterReport();
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 3_000 });
    const request = meterReport().find((r) => r.invocation === "GET /v1/events/verify");
    expect(request, JSON.stringify(meterReport())).toBeDefined();
    expect(request!.d1Queries).toBeLessThanOrEqual(12);
  }, 60_000);
});

describe("incremental verify (since=checkpoint)", () => {
  const verify = async (key: string, query = "") => {
    const res = await call("GET", `/v1/events/verify${query}`, { key });
    expect(res.status).toBe(200);
    return res.json.data;
  };

  it("after 1,000 new events checks only those, and adds the checkpoint's counts", async () => {
    const p = await project(2_000);
    expect(await ledgerOf(env, p.id).verifyCheckpoint()).toBeNull();
    expect(await verify(p.key)).toMatchObject({ ok: true, verified: 2_000 });
    const checkpoint = (await ledgerOf(env, p.id).verifyCheckpoint())!;
    expect(checkpoint).toMatchObject({ seq: 2_000, tree_size: 2_000, verified: 2_000, gaps: 0 });

    await ingestMany(p.key, events(1_000));
    const plan = await planVerify(env, p.id, OPEN, { since: checkpoint });
    expect(plan.chunks).toEqual([{ after: 2_000, through: 3_000 }]);
    expect(await verify(p.key, "?since=checkpoint")).toMatchObject({ ok: true, verified: 3_000, failure: null });
    expect((await ledgerOf(env, p.id).verifyCheckpoint())!.seq).toBe(3_000);

    // Rows before the checkpoint are not read again: an edit there shows only in the full verify, the audit.
    await p.db.prepare("UPDATE events SET action = 'x' WHERE project_id = ? AND seq = 10").bind(p.id).run();
    expect(await verify(p.key, "?since=checkpoint")).toMatchObject({ ok: true, verified: 3_000 });
    expect((await verify(p.key)).failure).toMatchObject({ reason: "hash_mismatch" });
  }, 60_000);

  it("is what a verify job with since: checkpoint runs: one chunk of the new events, and the old edit unseen, as the GET", async () => {
    const p = await project(600);
    expect(await verify(p.key)).toMatchObject({ ok: true, verified: 600 });
    await ingestMany(p.key, events(50));
    await p.db.prepare("UPDATE events SET action = 'x' WHERE project_id = ? AND seq = 10").bind(p.id).run();
    const created = await call("POST", "/v1/jobs", { key: p.key, body: { type: "verify", since: "checkpoint" } });
    expect(created.status).toBe(202);
    const job = await waitForJob(p.key, created.json.data.id);
    expect(job).toMatchObject({ status: "succeeded", progress: { done: 1, total: 1 }, result: { ok: true, verified: 650 } });
    // Without since, the job walks the whole history and finds the old edit.
    const whole = await waitForJob(p.key, (await call("POST", "/v1/jobs", { key: p.key, body: { type: "verify" } })).json.data.id);
    expect(whole.result.failure).toMatchObject({ reason: "hash_mismatch" });
  }, 60_000);

  it("catches a new row edited or the first new row deleted", async () => {
    const p = await project(600);
    expect(await verify(p.key)).toMatchObject({ ok: true });
    await ingestMany(p.key, events(300));
    const edited = (await rowAt(p.db, p.id, 750))!;
    await p.db.prepare("UPDATE events SET action = 'x' WHERE project_id = ? AND seq = 750").bind(p.id).run();
    expect((await verify(p.key, "?since=checkpoint")).failure).toEqual({ event_id: edited.id, reason: "hash_mismatch", at: edited.occurred_at });
    await p.db.prepare("UPDATE events SET action = 'doc.edited' WHERE project_id = ? AND seq = 750").bind(p.id).run();
    const next = (await rowAt(p.db, p.id, 602))!;
    await p.db.prepare("DELETE FROM events WHERE project_id = ? AND seq = 601").bind(p.id).run();
    expect((await verify(p.key, "?since=checkpoint")).failure).toEqual({ event_id: next.id, reason: "chain_broken", at: next.occurred_at });
  }, 60_000);

  it("fails when the checkpoint's tree is not a prefix of the current tree", async () => {
    const p = await project(500);
    expect(await verify(p.key)).toMatchObject({ ok: true });
    await ingestMany(p.key, events(100));
    const { runInDurableObject } = await import("cloudflare:test");
    await runInDurableObject(ledgerOf(env, p.id), (_instance, state) => {
      const stored = state.storage.kv.get<{ root_hash: string }>("verify_checkpoint")!;
      state.storage.kv.put("verify_checkpoint", { ...stored, root_hash: btoa(String.fromCharCode(...new Uint8Array(32).fill(7))) });
    });
    expect(await verify(p.key, "?since=checkpoint")).toMatchObject({ ok: false, failure: { event_id: null, reason: "leaf_mismatch", at: null } });
    // The full verify does not rely on the checkpoint.
    expect(await verify(p.key)).toMatchObject({ ok: true, verified: 600 });
  }, 60_000);

  it("refuses since with a window, and anything but since=checkpoint", async () => {
    const p = await createProject();
    expect((await call("GET", "/v1/events/verify?since=yesterday", { key: p.key })).status).toBe(400);
    expect((await call("GET", "/v1/events/verify?since=checkpoint&from=2026-01-01T00:00:00Z", { key: p.key })).status).toBe(400);
    // No checkpoint yet: a full verify.
    expect(await verify(p.key, "?since=checkpoint")).toMatchObject({ ok: true, verified: 0 });
  });
});

describe("VERIFY_PARALLELISM", () => {
  it("sets how many chunks run at once, and a value outside 1..64 falls back to the default instead of stalling verify", () => {
    expect(verifyParallelism(env)).toBe(8);
    expect(verifyParallelism({ VERIFY_PARALLELISM: "32" })).toBe(32);
    expect(verifyParallelism({ VERIFY_PARALLELISM: "1" })).toBe(1);
    for (const bad of ["0", "65", "2.5", "many", ""]) expect(verifyParallelism({ VERIFY_PARALLELISM: bad })).toBe(PARALLEL_CHUNKS);
  });
});
