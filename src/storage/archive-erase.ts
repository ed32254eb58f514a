import type { ErasureRecords } from "../chain/erasure-records";
import type { ErasureRequest } from "../chain/erasure";
import { insertSegment } from "./archive-run";
import { putSealed, resealWithCompanions, segmentObjects } from "./archive-companions";
import { readSegment, type ArchivedRow, type Segment } from "./archive-segments";

/**
 * Actor erasure in the cold tier: every segment holding the person's events
 * is rewritten with their personal data scrubbed exactly as eraseRows scrubs
 * a hot row (the commitment stays, so verify still passes), its export
 * companions rendered again from the scrubbed rows. The rows are covered by
 * the erasure record first; the new objects are written under new keys, the
 * index row switched to them in one statement, and only then are the old
 * objects deleted: a crash leaves the segment readable either way (an
 * interrupted erasure is retried, and covers again). Called by eraseActor,
 * under the ledger's commit lock. Segments carry no actor index, so every
 * segment of the project is read: erasures are rare, archives large.
 */
export async function eraseArchived(
  env: Env,
  db: D1Database,
  records: ErasureRecords,
  req: ErasureRequest,
  erasedAt: string,
  erasureId: number,
): Promise<number> {
  const { results } = await db.prepare("SELECT * FROM archive_segments WHERE project_id = ? ORDER BY first_seq").bind(req.projectId).all<Segment>();
  const named = (r: ArchivedRow) =>
    (req.by === "id" ? r.actor_id : r.actor_email) === req.value && (req.organization === null || r.organization === req.organization);
  let total = 0;
  for (const segment of results) {
    const rows = await readSegment(env, segment);
    const hits = rows.filter(named);
    if (hits.length === 0) continue;
    records.cover(erasureId, hits.map((r) => r.seq));
    const scrubbed = rows.map((r) =>
      named(r) ? { ...r, actor_id: null, actor_name: null, actor_email: null, ip_address: null, user_agent: null, pii_salt: null, anonymized_at: erasedAt } : r,
    );
    const sealed = (await resealWithCompanions(req.projectId, scrubbed, segment.first_seq, segment.created_at))!;
    const key = segment.object_key.replace(/(\.\d+)?\.jsonl\.gz$/, `.${Date.parse(erasedAt)}.jsonl.gz`);
    const next = { ...sealed, segment: { ...sealed.segment, object_key: key } };
    // Segment and companions first, then the index row naming their hashes, then the old objects (which still hold the personal data).
    await putSealed(env, next);
    await insertSegment(db, next.segment).run();
    if (key !== segment.object_key) await env.ARCHIVE.delete(segmentObjects(segment.object_key));
    total += hits.length;
  }
  return total;
}
