/**
 * src/streams/: pushing a project's events to a customer's SIEM or bucket.
 * Start here: the stream rows (this file); batch-read.ts reads what to send,
 * formats.ts and object-storage.ts build each destination's request
 * (ocsf-parquet.ts an s3 stream's Parquet files), send.ts and transport.ts
 * deliver and back off, targets.ts and destinations.ts keep delivery to
 * allowed hosts, secrets.ts seals credentials. The per-stream
 * Durable Object (src/durable/stream-delivery.do.ts) drives it.
 */
import type { StreamEncoding, StreamType } from "./batch";
/** Stream rows in the control database (table streams, migrations/0008_streams.sql). */

/** paused: by an admin (POST /v1/streams/:id/pause), until resumed; the cursor stays. */
export type StreamStatus = "active" | "failing" | "disabled" | "paused";

export interface StreamFilter {
  /** Exact actions, or prefixes written "user.*"; absent: every action. */
  actions?: string[];
  organization?: string;
}

export interface StreamRow {
  id: string;
  project_id: string;
  type: StreamType;
  url: string;
  /** AES-GCM ciphertext (secrets.ts); never leaves the service. */
  credential: string;
  filter: string;
  /** What each event is written as: null or "json" the API's event shape, "ocsf" an OCSF 1.3.0 event (migration 0022). */
  format: "json" | "ocsf" | null;
  /** How a batch's events are put in its body (batch.ts, ENCODINGS); null: the type's default (migration 0023). Optional for callers inserting without one. */
  encoding?: StreamEncoding | null;
  status: StreamStatus;
  created_at: string;
  /** The organization whose customer portal made it (migration 0026); null for the vendor's own streams. */
  portal_organization?: string | null;
}

export const MAX_STREAMS_PER_PROJECT = 20;

export async function getStream(env: Env, id: string): Promise<StreamRow | null> {
  return env.DB.prepare("SELECT * FROM streams WHERE id = ?").bind(id).first<StreamRow>();
}

export async function projectStream(env: Env, projectId: string, id: string): Promise<StreamRow | null> {
  return env.DB.prepare("SELECT * FROM streams WHERE id = ? AND project_id = ?").bind(id, projectId).first<StreamRow>();
}

/** The project's streams; with portalOrganization, only those that organization's portal made. */
export async function listStreams(env: Env, projectId: string, portalOrganization?: string): Promise<StreamRow[]> {
  const { results } =
    portalOrganization === undefined
      ? await env.DB.prepare("SELECT * FROM streams WHERE project_id = ? ORDER BY created_at, id").bind(projectId).all<StreamRow>()
      : await env.DB.prepare("SELECT * FROM streams WHERE project_id = ? AND portal_organization = ? ORDER BY created_at, id").bind(projectId, portalOrganization).all<StreamRow>();
  return results;
}

/** How many streams a project has (at most MAX_STREAMS_PER_PROJECT). */
export async function countStreams(env: Env, projectId: string): Promise<number> {
  const row = await env.DB.prepare("SELECT count(*) AS n FROM streams WHERE project_id = ?").bind(projectId).first<{ n: number }>();
  return row?.n ?? 0;
}

export async function insertStream(env: Env, row: StreamRow): Promise<void> {
  await env.DB.prepare(
    "INSERT INTO streams (id, project_id, type, url, credential, filter, format, encoding, status, created_at, portal_organization) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
  )
    .bind(row.id, row.project_id, row.type, row.url, row.credential, row.filter, row.format, row.encoding ?? null, row.status, row.created_at, row.portal_organization ?? null)
    .run();
}

/** Forgets a stream; with projectId, only that project's. */
export async function deleteStream(env: Env, id: string, projectId?: string): Promise<void> {
  if (projectId === undefined) await env.DB.prepare("DELETE FROM streams WHERE id = ?").bind(id).run();
  else await env.DB.prepare("DELETE FROM streams WHERE id = ? AND project_id = ?").bind(id, projectId).run();
}

export async function setStreamStatus(env: Env, id: string, status: StreamStatus): Promise<void> {
  await env.DB.prepare("UPDATE streams SET status = ? WHERE id = ? AND status != ?").bind(status, id, status).run();
}

export function matchesFilter(filter: StreamFilter, action: string, organization: string | null): boolean {
  if (filter.organization !== undefined && filter.organization !== organization) return false;
  if (!filter.actions || filter.actions.length === 0) return true;
  return actionMatches(filter.actions, action);
}

/** An action against patterns: exact names, or prefixes ending in `*` (streams' filters, alert rules). */
export function actionMatches(patterns: readonly string[], action: string): boolean {
  return patterns.some((p) => (p.endsWith("*") ? action.startsWith(p.slice(0, -1)) : p === action));
}

export function deliveryStub(env: Env, streamId: string) {
  return env.STREAM_DELIVERY.get(env.STREAM_DELIVERY.idFromName(streamId));
}
