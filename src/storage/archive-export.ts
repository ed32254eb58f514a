import { metadataMatches, type Selection } from "../model/event-query";
import { companionKey, readSealed, type ArchivedRow, type CompanionFormat, type Segment } from "./archive-segments";

/**
 * What exports (src/reads/export-part.ts) and export jobs need of the cold
 * tier: the selection's filters applied to archived rows, and a segment's
 * pre-rendered companion, served only when it hashes to what the project's
 * ledger recorded for it (src/storage/companion-records.ts).
 */

/** The selection's filters, as selectEvents applies them in SQL. */
export function matches(sel: Selection, r: ArchivedRow): boolean {
  if (sel.organization !== null && r.organization !== sel.organization) return false;
  if (sel.actorId !== null && r.actor_id !== sel.actorId) return false;
  if (sel.ipAddress !== null && r.ip_address !== sel.ipAddress) return false;
  if (sel.dateFrom !== null && r.occurred_at < sel.dateFrom) return false;
  if (sel.dateTo !== null && r.occurred_at > sel.dateTo) return false;
  if (sel.actions !== null && !sel.actions.includes(r.action)) return false;
  if (sel.targetType != null && !hasTarget(r.targets, sel.targetType, sel.targetId ?? null)) return false;
  if (sel.metadata && sel.metadata.length > 0 && !metadataMatches(r.metadata, sel.metadata)) return false;
  return !sel.exclude.includes(r.action);
}

function hasTarget(targets: string, type: string, id: string | null): boolean {
  return (JSON.parse(targets) as Array<{ type: string; id: string }>).some((t) => t.type === type && (id === null || t.id === id));
}

/**
 * A segment's companion, decompressed; null when the ledger recorded none for
 * the segment (`expected` null) or it is missing or its SHA-256 is not the
 * recorded one (an interrupted rewrite, or tampering): the caller then reads
 * the segment itself, whose own hash is checked, so a stale or planted
 * companion is never served.
 */
export async function companionBytes(env: Env, segment: Segment, format: CompanionFormat, expected: string | null): Promise<Uint8Array | null> {
  if (!expected) return null;
  const key = companionKey(segment.object_key, format);
  const bytes = await readSealed(env, key, expected);
  if (bytes === "missing") console.warn(`archive companion ${key} is missing; exporting its segment row by row`);
  if (bytes === "hash_differs") console.warn(`archive companion ${key}: its SHA-256 differs from the ledger's record; exporting its segment row by row`);
  return typeof bytes === "string" ? null : bytes;
}
