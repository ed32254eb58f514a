import { deleteStagedExports } from "../reads/export-stream";

/** Rows rewritten per statement: keeps every statement (and its FTS trigger work) small, whatever the actor's size. */
export const ERASURE_BATCH = 500;

export interface ErasureRequest {
  projectId: string;
  actorId: string;
  /** When set, only this tenant's events are scrubbed. */
  organization: string | null;
}

/**
 * Scrubs one actor's clear personal data and its salt; the commitment stays,
 * so the chain still verifies. Each statement takes the next batch of rows that
 * still carry the actor id: scrubbed rows drop out of the match (actor_id is
 * erased too), so the loop ends and a repeat finds nothing. The FTS update
 * trigger drops the erased values from the search index.
 */
export async function eraseActorRows(
  db: D1Database,
  req: ErasureRequest,
  now = new Date().toISOString(),
  batch = ERASURE_BATCH,
): Promise<number> {
  const statement = db.prepare(
    `UPDATE events SET actor_id = NULL, actor_name = NULL, actor_email = NULL, ip_address = NULL,
       user_agent = NULL, pii_salt = NULL, anonymized_at = ?1
     WHERE row_id IN (
       SELECT row_id FROM events
       WHERE project_id = ?2 AND actor_id = ?3 AND (?4 IS NULL OR organization = ?4)
       LIMIT ?5)
     RETURNING row_id`,
  );
  let total = 0;
  for (;;) {
    // Counted from RETURNING: D1's meta.changes also counts the FTS trigger's writes.
    const { results } = await statement.bind(now, req.projectId, req.actorId, req.organization, batch).all();
    total += results.length;
    if (results.length < batch) return total;
  }
}

/** The whole erasure of one actor: rows first, then every staged export of the project. */
export async function eraseActor(env: Env, db: D1Database, req: ErasureRequest): Promise<number> {
  const anonymized = await eraseActorRows(db, req);
  // Staged exports may hold the erased values in clear.
  await deleteStagedExports(env, req.projectId);
  return anonymized;
}
