/** Helpers for tests of the cold archive: sealing segments, and playing a deployment from before the ledger kept companion records. */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { ledgerOf } from "../../src/chain/ledger";
import type { Segment } from "../../src/storage/archive-segments";

/** Seals segments of `rows` from the oldest hot events until nothing is due, then turns tiering off again. */
export async function archiveAll(projectId: string, rows: number) {
  await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(projectId).run();
  const ledger = ledgerOf(env, projectId);
  for (let i = 0; i < 100; i++) if ((await ledger.archiveSegment(new Date().toISOString(), { segmentRows: rows })).done) break;
  await env.DB.prepare("UPDATE projects SET hot_days = NULL WHERE id = ?").bind(projectId).run();
}

export async function segmentsOf(db: D1Database, projectId: string): Promise<Segment[]> {
  return (await db.prepare("SELECT * FROM archive_segments WHERE project_id = ? ORDER BY first_seq").bind(projectId).all<Segment>()).results;
}

/** The ledger forgets what it recorded of these segments' companions: as for segments sealed before it kept records. */
export async function forgetCompanionRecords(projectId: string, segments: Segment[]) {
  await runInDurableObject(ledgerOf(env, projectId), (_instance, state) => {
    for (const s of segments) state.storage.sql.exec("DELETE FROM archive_companions WHERE segment_sha256 = ?", s.sha256);
  });
}

/** As for segments sealed before the id index: no entries for them, and ids not located (src/model/event-id.ts). */
export async function forgetArchivedIds(db: D1Database, projectId: string) {
  await db.batch([
    db.prepare("DELETE FROM archive_ids WHERE project_id = ?").bind(projectId),
    db.prepare("UPDATE archive_segments SET id_tag = NULL, first_id = NULL WHERE project_id = ?").bind(projectId),
  ]);
}

export async function gzipText(text: string): Promise<ArrayBuffer> {
  return new Response(new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer();
}

export async function gunzipText(bytes: ArrayBuffer): Promise<string> {
  return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text();
}

/**
 * Lets a ledger's alarms run until `settled` holds: the runtime fires a due
 * alarm on its own, this fires it without waiting (an alarm already running
 * is left to finish). Archiving runs from the alarm (src/storage/archive-upkeep.ts).
 */
export async function alarmsUntil(projectId: string, settled: () => Promise<boolean>, max = 200) {
  for (let i = 0; i < max; i++) {
    if (await settled()) return;
    if (!(await runDurableObjectAlarm(ledgerOf(env, projectId)))) await scheduler.wait(20);
  }
  throw new Error(`the alarms of ${projectId} never brought it where the test expects`);
}
