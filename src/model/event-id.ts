// .ts extension: chain/event-insert.ts imports this file, and test/bench/sqlite-floor.mjs runs that in plain Node.
import { sha256Hex, uuidV7 } from "../lib/crypto.ts";

/**
 * Event ids that say where the event is (storage v2, issue 38). An id is a
 * UUIDv7 (RFC 9562) whose 48-bit time is the event's received_at to the
 * millisecond and whose last 32 bits are a tag of its project (the first 4
 * bytes of a SHA-256 of the project id); the 42 bits between stay random, so
 * ids remain unguessable. They are unique without an index to enforce it:
 * no two commits of a project share a millisecond (chain/group-commit.ts),
 * and within one commit, where they share it, sealing draws again on a
 * repeat (chain/seal-events.ts).
 *
 * Hot, such an id is found through its commit's span, with no id index entry
 * of its own (model/event-lookup.ts, migration 0029).
 *
 * Once archived, such an id is found without a row of its own: the tag names
 * the project's segments and the time names the one segment whose receive
 * range holds it (storage/archive-lookup.ts). Before this, a lookup needed an
 * index row per archived event (archive_ids: two billed rows at archive, one
 * at purge, ~135 bytes of D1 kept for as long as the event was).
 *
 * Ids minted before (time a few ms after received_at, all 74 bits random) are
 * not "located"; sealing checks every row (locatedTag) and keeps the old
 * index for a segment with any such id.
 */

const tags = new Map<string, Promise<number>>();

/** The project's 32-bit tag (cached per isolate: ingest mints one id per event). */
export function idTag(projectId: string): Promise<number> {
  let tag = tags.get(projectId);
  if (!tag) {
    tag = sha256Hex(`witness.event-id-tag.v1\n${projectId}`).then((hex) => parseInt(hex.slice(0, 8), 16));
    tags.set(projectId, tag);
  }
  return tag;
}

/** A located id for an event received at `receivedAt` (an ISO time) in the project with this tag. */
export function mintEventId(receivedAt: string, tag: number): string {
  return uuidV7(Date.parse(receivedAt), tag);
}

/** The millisecond a UUIDv7 was minted at, or null for anything else. */
export function idMillis(id: string): number | null {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i.test(id)) return null;
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

/** What every located id minted at `ms` or later starts with or sorts above: ids sort by their minting time, in an index too. */
export function locatedIdsFrom(ms: number): string {
  const hex = Math.max(0, ms).toString(16).padStart(12, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}`;
}

/** The last 8 characters of every located id of the project with this tag. */
export function tagSuffix(tag: number): string {
  return (tag >>> 0).toString(16).padStart(8, "0");
}

/** The project tag an id carries (meaningful only for a located id). */
export function tagOfId(id: string): number {
  return parseInt(id.slice(-8), 16);
}

/**
 * The tag under which a segment's rows (seq order) can be found by id alone,
 * or null when any row was not minted located, or receive times step back
 * (a clock that went backwards) so that the segment's first and last receive
 * times do not bound every row's.
 */
export async function locatedTag(projectId: string, rows: ReadonlyArray<{ id: string; received_at: string }>): Promise<number | null> {
  if (rows.length === 0) return null;
  const tag = await idTag(projectId);
  let last = "";
  for (const r of rows) {
    if (r.received_at < last || tagOfId(r.id) !== tag || idMillis(r.id) !== Date.parse(r.received_at)) return null;
    last = r.received_at;
  }
  return tag;
}
