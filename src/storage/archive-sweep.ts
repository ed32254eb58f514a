import { segmentObjects } from "./archive-companions";

/**
 * Deletes the objects under a project's archive prefix that no index row
 * names. They are what an interrupted step left behind: an erasure that
 * switched its index row to the scrubbed objects but crashed before deleting
 * the old ones (which still hold the erased personal data, and which no
 * retry would find again), or a seal whose transaction never ran. Only the
 * ledger calls it, holding its commit lock, so no seal or retention rewrite
 * is between writing its objects and its index row meanwhile. An erasure
 * writes its scrubbed copy outside the lock (archive-erase.ts), so the
 * objects of erasures still running (`.e<id>.` keys, `running`) are kept:
 * swept, they would leave its switch naming deleted objects. Returns how
 * many were deleted.
 */
export async function sweepUnindexed(env: Env, db: D1Database, projectId: string, running: ReadonlySet<number> = new Set()): Promise<number> {
  const { results } = await db.prepare("SELECT object_key FROM archive_segments WHERE project_id = ?").bind(projectId).all<{ object_key: string }>();
  const named = new Set(results.flatMap((r) => segmentObjects(r.object_key)));
  let deleted = 0;
  let cursor: string | undefined;
  do {
    // The trailing slash keeps project "p1" from covering "p10".
    const page = await env.ARCHIVE.list({ prefix: `archive/${projectId}/`, cursor, limit: 1000 });
    const leftovers = page.objects.map((o) => o.key).filter((key) => !named.has(key) && !running.has(erasureOf(key)));
    if (leftovers.length > 0) await env.ARCHIVE.delete(leftovers);
    deleted += leftovers.length;
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return deleted;
}

/** The erasure whose rewrite wrote this key (prepareRewrite's `.e<id>` suffix), or -1. */
function erasureOf(key: string): number {
  const match = /\.e(\d+)\.(?:jsonl|csv|json)\.gz$/.exec(key);
  return match ? Number(match[1]) : -1;
}
