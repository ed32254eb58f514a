/** Helpers for tests of the ledger's transparency log: playing a pre-log ledger, a D1 writer, a log client. */
import { env } from "cloudflare:workers";
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { type Head } from "../../src/chain/chain-check";
import { sealRow } from "../../src/sealing/payload";
import { loadKeyring } from "../../src/sealing/signing-keys";
import type { ProjectLedger } from "../../src/durable/project-ledger.do";
import { leafDiffers, pageLeaves } from "../../src/tlog/leaf-check";
import { ProjectLog } from "../../src/log/project-log";
import { CHAIN_COLUMNS, chainRowOf, type ChainRow } from "../../src/model/chain-row";

export const ledger = (projectId: string) => env.LEDGER.get(env.LEDGER.idFromName(projectId));

/**
 * Makes the project's ledger one that never had a log, as every ledger was
 * before this feature shipped: its tree and log state are dropped. With
 * `evict`, the next request starts the ledger as after a deploy (its alarm
 * then builds the tree); without, the log restarts in place with no alarm
 * set, so a test can run the backfill step by step.
 */
export async function forgetLog(projectId: string, options: { evict?: boolean } = {}): Promise<void> {
  await runInDurableObject(ledger(projectId), async (instance: ProjectLedger, state) => {
    await state.storage.deleteAlarm();
    state.storage.sql.exec("DROP TABLE IF EXISTS log_tiles");
    state.storage.sql.exec("DROP TABLE IF EXISTS log_tile_digests");
    for (const key of ["log:frontier", "log:build", "log:cosigned", "log:witness_sizes", "log:witness_last"]) state.storage.kv.delete(key);
    const i = instance as unknown as { log: ProjectLog; current: Head };
    // Such a ledger kept its head in KV, written by every commit (the log's leaf rows keep it now).
    state.storage.kv.put("head", i.current);
    i.log = new ProjectLog(state.storage, env, projectId);
    i.log.init(i.current);
  });
  if (options.evict) await evictDurableObject(ledger(projectId));
}

export async function chainRows(db: D1Database, projectId: string, fromSeq = 1): Promise<ChainRow[]> {
  const cells = await db.prepare(`SELECT ${CHAIN_COLUMNS} FROM events WHERE project_id = ? AND seq >= ? ORDER BY seq`).bind(projectId, fromSeq).raw();
  return cells.map(chainRowOf);
}

/**
 * An attacker with D1 write access and the real HMAC key: rewrites the
 * action of event `seq`, then re-hashes and re-signs it and, with `through`,
 * every later event up to that seq, so each of them checks out on its own.
 */
export async function rewriteEvents(db: D1Database, projectId: string, seq: number, through = seq): Promise<ChainRow[]> {
  const ring = await loadKeyring(env.SIGNING_KEYS);
  const rows = (await chainRows(db, projectId, seq)).filter((r) => r.seq <= through);
  const before = (await chainRows(db, projectId, seq - 1))[0];
  let prev = seq === 1 ? null : before.hash;
  const out: ChainRow[] = [];
  for (const row of rows) {
    const sealed = await sealRow({ ...row, action: row.seq === seq ? "admin.granted" : row.action, prev_hash: prev }, ring);
    await db
      .prepare("UPDATE events SET action = ?, hash = ?, prev_hash = ?, signature = ? WHERE id = ?")
      .bind(sealed.action, sealed.hash, sealed.prev_hash, sealed.signature, sealed.id)
      .run();
    prev = sealed.hash;
    out.push(sealed);
  }
  return out;
}

/** What verify does per page: the seqs among `rows` whose hash is not their leaf in the ledger's tree. */
export async function leafCheck(projectId: string, rows: ReadonlyArray<{ seq: number; hash: string }>): Promise<number[]> {
  const leafOf = await pageLeaves((indexes) => ledger(projectId).leavesAt(indexes), rows);
  const flagged: number[] = [];
  for (const [i, row] of rows.entries()) if (await leafDiffers(row.hash, leafOf(i))) flagged.push(row.seq);
  return flagged;
}
