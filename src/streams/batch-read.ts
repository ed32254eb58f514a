/** What a log stream's delivery reads: its next batch from either tier, and how far behind it is. */
import { catalogFor } from "../catalog/catalog-cache";
import { ocsfWriter } from "../model/export-formats";
import { eventJson, PENDING_AT, SHAPE_SELECT, shapeRowOf, type ShapeRow } from "../model/event-shape";
import { scrubArchived, scrubByColumn } from "../model/pending-erasures";
import { archivedRows } from "../storage/archive-segments";
import { eventsDb, inProjectArms } from "../storage/shards";
import { mergeBySeq } from "../model/periods";
import { BATCH_LIMITS, entryBytes, requestOverhead } from "./formats";
import { matchesFilter, type StreamFilter } from "./store";
import type { BatchEvent, Destination } from "./batch";
import { rowsBySeq, seqEdge } from "../model/row-keys";

export interface DeliveryConfig {
  dest: Destination;
  filter: StreamFilter;
  format: "json" | "ocsf";
  /** When the row was read (a long-lived object reads it again now and then). Addresses are checked at every attempt (send.ts). */
  loadedAt: number;
}

/** A read range in flight: (from, to]. A retry re-reads exactly it, so a batch repeats whole, with the same webhook-id. */
export interface Pending {
  from: number;
  to: number;
}

export interface Batch {
  events: BatchEvent[];
  /** The last seq this batch covers (filtered-out and purged events included). */
  to: number;
  gaps: { first_seq: number; last_seq: number }[];
}

/**
 * The next batch after cursor, or null when there is nothing after it. A
 * pending range that starts at the cursor is a retry: it is read again whole,
 * so the batch repeats with the same webhook-id.
 */
export async function readBatch(env: Env, config: DeliveryConfig, cursor: number, pending: Pending | undefined): Promise<Batch | null> {
  const { projectId, type } = config.dest;
  const limits = BATCH_LIMITS[type];
  const db = await eventsDb(env, projectId);
  // Sentences as the catalog renders them now (a retried batch may read differently if a template changed meanwhile).
  const catalog = await catalogFor(env, projectId);
  const write = config.format === "ocsf" ? ocsfWriter(catalog.ocsfView()) : (row: ShapeRow) => eventJson(row, catalog.display);
  const retry = pending && pending.from === cursor ? pending : null;
  // Each arm's rows after the cursor in seq order, merged: an event is in one arm.
  const lists = await inProjectArms(env, projectId, db, async (arm) => {
    const cells = retry
      ? await arm
          .prepare(`SELECT ${SHAPE_SELECT} FROM ${rowsBySeq({ project: "?1", lo: "?2 + 1", hi: "?3" })} e`)
          .bind(projectId, cursor, retry.to)
          .raw()
      : await arm
          .prepare(`SELECT ${SHAPE_SELECT} FROM ${rowsBySeq({ project: "?1", lo: "?2 + 1", hi: null, limit: "?3" })} e`)
          .bind(projectId, cursor, limits.events * 2)
          .raw();
    // An erasure still being applied is applied here too (src/model/pending-erasures.ts): a stream never delivers erased values.
    return scrubByColumn(cells.map(shapeRowOf), cells, PENDING_AT);
  });
  const hot = mergeBySeq(lists, retry ? Infinity : limits.events * 2);
  let rows: ShapeRow[] = hot;
  // Events older than the project's hot window live in the cold archive (R2),
  // always a prefix of the seqs: look there only when the hot rows do not
  // start right after the cursor. Read after the hot page, as the walkers do,
  // so an event being archived meanwhile is seen once, in one tier.
  if (hot.length === 0 || hot[0].seq > cursor + 1) {
    const before = hot.length > 0 ? hot[0].seq : retry ? retry.to + 1 : undefined;
    const cold = await scrubArchived(db, projectId, await archivedRows(env, db, projectId, cursor, retry ? Number.MAX_SAFE_INTEGER : limits.events * 2, before));
    if (cold.length > 0) rows = [...(cold as ShapeRow[]), ...hot];
  }
  const gaps: Batch["gaps"] = [];
  const events: BatchEvent[] = [];
  let expected = cursor + 1;
  let to = cursor;
  let bytes = requestOverhead(config.dest);
  for (const row of rows) {
    const matches = matchesFilter(config.filter, row.action, row.organization);
    if (!retry && matches) {
      const event = { seq: row.seq, occurredAt: row.occurred_at, json: "" };
      event.json = write(row);
      const size = entryBytes(type, event, projectId);
      if (events.length >= limits.events || (events.length > 0 && bytes + size > limits.bytes)) break;
      bytes += size;
      if (row.seq > expected) gaps.push({ first_seq: expected, last_seq: row.seq - 1 });
      events.push(event);
    } else {
      if (row.seq > expected) gaps.push({ first_seq: expected, last_seq: row.seq - 1 });
      if (matches) events.push({ seq: row.seq, occurredAt: row.occurred_at, json: write(row) });
    }
    expected = row.seq + 1;
    to = row.seq;
  }
  if (retry) {
    // The range is retried whole; whatever retention purged of it meanwhile is skipped.
    if (retry.to >= expected) gaps.push({ first_seq: expected, last_seq: retry.to });
    return { events, to: retry.to, gaps };
  }
  if (rows.length === 0) {
    // Nothing after the cursor, unless retention purged the newest events: then skip past them.
    const gap = await db
      .prepare("SELECT max(last_seq) AS last FROM retention_gaps WHERE project_id = ? AND first_seq <= ? AND last_seq >= ?")
      .bind(projectId, cursor + 1, cursor + 1)
      .first<{ last: number | null }>();
    if (!gap?.last) return null;
    return { events: [], to: gap.last, gaps: [{ first_seq: cursor + 1, last_seq: gap.last }] };
  }
  return { events, to, gaps };
}

/** Events after the cursor, and the age of the oldest of them (from received_at). */
export async function deliveryLag(env: Env, projectId: string, cursor: number): Promise<{ events: number; seconds: number }> {
  const db = await eventsDb(env, projectId);
  // Each arm's newest seq and oldest row after the cursor, in one batch an arm.
  const edges = await inProjectArms(env, projectId, db, async (arm) => {
    const [head, next] = await arm.batch<{ v: number | string | null }>([
      arm.prepare(`SELECT ${seqEdge("?1", true)} AS v`).bind(projectId),
      arm.prepare(`SELECT seq, received_at AS v FROM ${rowsBySeq({ project: "?1", lo: "?2 + 1", hi: null, limit: "1", columns: "e.seq, e.received_at" })}`).bind(projectId, cursor),
    ]);
    return { head: Number(head.results[0]?.v ?? 0), next: next.results as Array<{ seq: number; v: string }> };
  });
  const head = Math.max(...edges.map((e) => e.head));
  const oldest = mergeBySeq(edges.map((e) => e.next), 1)[0]?.v;
  return {
    events: Math.max(0, head - cursor),
    seconds: typeof oldest === "string" ? Math.max(0, Math.round((Date.now() - Date.parse(oldest)) / 1000)) : 0,
  };
}
