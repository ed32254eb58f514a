/** Helpers for the tests of retention in the cold tier (src/chain/retention-archive.ts). */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { expect } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import { readSegment } from "../../src/storage/archive-segments";
import { call, createProject, ingestMany } from "../helpers";
import { archiveAll, segmentsOf } from "./archive-helpers";

export const DAY = 86_400_000;
export const ago = (days: number) => new Date(Date.now() - days * DAY).toISOString();

export const batch = (n: number, action: string, occurredAt: string) =>
  Array.from({ length: n }, (_, i) => ({ action, actor: { id: `u_${i % 3}` }, occurred_at: occurredAt, metadata: { i } }));

export async function plan(key: string, rules: Array<{ pattern: string; days: number }>) {
  expect((await call("PUT", "/v1/retention", { key, body: { rules } })).status).toBe(200);
}

export async function verify(key: string) {
  const res = await call("GET", "/v1/events/verify", { key });
  expect(res.status).toBe(200);
  return res.json.data;
}

export async function count(db: D1Database, sql: string, ...params: unknown[]): Promise<number> {
  return (await db.prepare(`SELECT count(*) AS n FROM ${sql}`).bind(...params).first<{ n: number }>())!.n;
}

export async function objectKeys(projectId: string): Promise<string[]> {
  return (await env.ARCHIVE.list({ prefix: `archive/${projectId}/` })).objects.map((o) => o.key).sort();
}

export async function gapRows(db: D1Database, projectId: string) {
  const { results } = await db.prepare("SELECT first_seq, last_seq, purged_count FROM retention_gaps WHERE project_id = ? ORDER BY first_seq").bind(projectId).all();
  return results;
}

/** The seqs the project's archive holds, read from its segments' objects. */
export async function archivedSeqs(db: D1Database, projectId: string): Promise<number[]> {
  const seqs: number[] = [];
  for (const segment of await segmentsOf(db, projectId)) for (const row of await readSegment(env, segment)) seqs.push(row.seq);
  return seqs.sort((a, b) => a - b);
}

/**
 * The ledger's purge steps, one by one, as its cron wake-up and alarm run
 * them; `each` sees the project between steps. Returns the rows it refused.
 */
export async function purgeSteps(projectId: string, each: () => Promise<void> = async () => {}): Promise<{ purged: number; refused: number }> {
  const ledger = ledgerOf(env, projectId);
  const now = new Date().toISOString();
  let purged = 0;
  let refused = 0;
  for (let after = 0, i = 0; i < 100; i++) {
    const step = await ledger.purgeExpired(now, after);
    purged += step.purged;
    refused += step.refused;
    await each();
    if (step.done) return { purged, refused };
    after = step.lastSeq;
  }
  throw new Error("the purge never finished");
}

/** Work inside the project's ledger, on its key-value storage. */
export function ledgerKv<T>(projectId: string, work: (kv: SyncKvStorage, sql: SqlStorage) => T): Promise<T> {
  return runInDurableObject(ledgerOf(env, projectId), (_instance, state) => work(state.storage.kv, state.storage.sql));
}

/** One archived segment of ten events ten days old, every other one debug.trace, under a plan that expires debug.* after five days. */
export async function halfExpiredSegment() {
  const p = await createProject();
  const stored = await ingestMany(
    p.key,
    Array.from({ length: 10 }, (_, i) => ({ action: i % 2 === 0 ? "debug.trace" : "doc.keep", actor: { id: "u" }, occurred_at: ago(10) })),
  );
  await archiveAll(p.id, 10);
  const [original] = await segmentsOf(p.db, p.id);
  await plan(p.key, [{ pattern: "debug.*", days: 5 }]);
  return { p, stored, original };
}
