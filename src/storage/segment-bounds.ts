// .ts extensions: src/scripts/projects-reindex.mjs runs this file in plain Node.
import { locatedTag } from "../model/event-id.ts";

/** What a segment's index row says of its rows (seq order) for the reads that pick segments by time or by id. */
export interface SegmentBounds {
  first_received_at: string;
  last_received_at: string;
  first_occurred_at: string;
  last_occurred_at: string;
  /** The project's id tag when every row's id is located (model/event-id.ts), else null. */
  id_tag: number | null;
}

/**
 * The bounds of a segment's rows, in seq order, as its index row keeps them: sealSegment
 * (archive-segments.ts) writes them, and projects:reindex --archived writes them again where a D1 writer
 * changed them (verify's check: archive-walk.ts, unbounded).
 */
export async function segmentBounds(projectId: string, rows: ReadonlyArray<{ id: string; occurred_at: string; received_at: string }>): Promise<SegmentBounds> {
  const occurred = rows.map((r) => r.occurred_at).sort();
  return {
    first_received_at: rows[0].received_at,
    last_received_at: rows[rows.length - 1].received_at,
    first_occurred_at: occurred[0],
    last_occurred_at: occurred[occurred.length - 1],
    id_tag: await locatedTag(projectId, rows),
  };
}
