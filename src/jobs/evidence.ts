/**
 * Evidence exports (DESIGN "Jobs"): files a third party can check offline
 * with nothing but the log's verifier key (src/scripts/evidence-check.mjs).
 * The job pins the published tree at its plan; every part is a JSON object
 * holding its rows (the event shape plus pii_salt, so the personal data can
 * be checked against its commitment) and the multiproof of their leaves in
 * that tree; manifest.json ends the files, listing each file's SHA-256 and
 * what the export claims (filters, range, retention gaps), signed by the
 * log's key as a note whose first line no checkpoint can have.
 */
import { canonicalize } from "../chain/canonical";
import { ledgerOf } from "../chain/ledger";
import { base64Encode, HASH_SIZE } from "../log/encoding.ts";
import { logSigner } from "../log/log-identity";
import { signNote } from "../log/note.ts";
import type { Job } from "./job-store";

export const EVIDENCE_TYPE = "witness.evidence.v1";
export const MANIFEST_NAME = "manifest.json";

/** The tree an evidence export is proven against, fixed when the job starts. */
export interface EvidenceAnchor {
  size: number;
  checkpoint: string;
  origin: string;
}

export async function pinAnchor(env: Env, projectId: string): Promise<EvidenceAnchor> {
  const anchor = await ledgerOf(env, projectId).evidenceAnchor();
  // Without RECEIPT_SIGNING_KEYS the log signs nothing, and an unsigned manifest would prove nothing.
  if (!anchor) throw new Error("evidence exports need the log's signing key (RECEIPT_SIGNING_KEYS is not set)");
  return anchor;
}

/** One part's file: its rows (export order) and the proof of their leaves, ascending by index. */
export async function evidencePart(env: Env, projectId: string, anchor: EvidenceAnchor, lines: string[], seqs: number[]): Promise<string> {
  const indexes = seqs.map((s) => s - 1).sort((a, b) => a - b);
  const proof = await ledgerOf(env, projectId).logMultiproof(anchor.size, indexes);
  if (!proof) throw new Error(`the log cannot prove these rows in its tree of ${anchor.size}`);
  const hashes: string[] = [];
  for (let at = 0; at < proof.length; at += HASH_SIZE) hashes.push(JSON.stringify(base64Encode(proof.subarray(at, at + HASH_SIZE))));
  return `{"type":"${EVIDENCE_TYPE}.part","tree_size":${anchor.size},"rows":[${lines.join(",")}],"proof":[${hashes.join(",")}]}`;
}

/** A row of the event shape with its pii_salt, which only evidence exports carry. */
export function withSalt(eventJson: string, salt: unknown): string {
  return `${eventJson.slice(0, -1)},"pii_salt":${JSON.stringify(salt ?? null)}}`;
}

const hasFilter = (filters: Record<string, unknown>) => Object.values(filters).some((v) => v !== undefined && v !== null && v !== "");

/** Retention's holes in 1..size, which an unfiltered export lacks by design. */
async function gapsThrough(db: D1Database, projectId: string, size: number) {
  const { results } = await db
    .prepare("SELECT first_seq, last_seq, purged_count, purged_at FROM retention_gaps WHERE project_id = ? AND first_seq <= ? ORDER BY first_seq")
    .bind(projectId, size)
    .all<{ first_seq: number; last_seq: number; purged_count: number; purged_at: string }>();
  return results;
}

/** manifest.json's text: the body, and the log's signature over the SHA-256 of its RFC 8785 form. */
export async function evidenceManifest(env: Env, db: D1Database, job: Job, anchor: EvidenceAnchor, filters: Record<string, unknown>): Promise<string> {
  const unfiltered = !hasFilter(filters);
  const files = job.files.filter((f) => f.name !== MANIFEST_NAME);
  const body = {
    type: EVIDENCE_TYPE,
    project_id: job.projectId,
    job_id: job.id,
    created_at: job.createdAt,
    origin: anchor.origin,
    tree_size: anchor.size,
    checkpoint: anchor.checkpoint,
    filters,
    // Only without filters can a reader check that nothing is missing: every seq up to tree_size is a row or inside a gap.
    complete: unfiltered,
    gaps: unfiltered ? await gapsThrough(db, job.projectId, anchor.size) : [],
    rows: files.reduce((n, f) => n + f.rows, 0),
    files: files.map(({ name, bytes, rows, sha256 }) => ({ name, bytes, rows, sha256 })),
  };
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(canonicalize(body))));
  const signer = await logSigner(env, anchor.origin);
  if (!signer) throw new Error("evidence exports need the log's signing key (RECEIPT_SIGNING_KEYS is not set)");
  const signature = await signNote(`${EVIDENCE_TYPE}\n${anchor.origin}\n${base64Encode(digest)}\n`, [signer]);
  return `${JSON.stringify({ ...body, signature }, null, 2)}\n`;
}
