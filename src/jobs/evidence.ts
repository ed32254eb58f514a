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
import { canonicalize } from "../sealing/canonical";
import { gapIsAuthentic, type GapRecord } from "../chain/gap-records";
import { ledgerOf } from "../chain/ledger";
import { loadKeyring } from "../sealing/signing-keys";
import { base64Encode, bytesEqual, HASH_SIZE } from "../tlog/encoding.ts";
import { leafDigestOf } from "../tlog/leaf-check";
import { logSigner } from "../log/log-identity";
import { signNote } from "../tlog/note.ts";
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

/**
 * An evidence export D1 would have the log vouch for though verify refuses it:
 * the job fails with this message and no manifest is signed.
 */
export class EvidenceRefused extends Error {}

/**
 * Retention's holes in 1..size, which an unfiltered export lacks by design,
 * each checked as verify checks it before the log's signature covers it:
 * signed by this service's keys, one after another, and bridging exactly the
 * events the log holds at both its ends. Whoever can write D1 can delete
 * events and plant a record over them; the log's leaves live in the ledger.
 */
async function gapsThrough(env: Env, db: D1Database, projectId: string, size: number) {
  const { results } = await db
    .prepare("SELECT * FROM retention_gaps WHERE project_id = ? AND first_seq <= ? ORDER BY first_seq")
    .bind(projectId, size)
    .all<GapRecord>();
  if (results.length === 0) return [];
  // Each gap's ends: the leaf before its first event (none from seq 1) and the leaf of its last.
  const ends = results.flatMap((g) => [g.first_seq - 2, g.last_seq - 1]);
  const [ring, { treeSize, leaves }] = await Promise.all([loadKeyring(env.SIGNING_KEYS), ledgerOf(env, projectId).leavesAt(ends)]);
  const leafIs = async (i: number, hash: string | null) => {
    if (ends[i] < 0) return hash === null;
    const digest = hash === null || ends[i] >= treeSize ? null : leafDigestOf(hash);
    return digest !== null && bytesEqual(new Uint8Array(await digest), leaves.subarray(i * HASH_SIZE, (i + 1) * HASH_SIZE));
  };
  let after = 0;
  for (const [k, g] of results.entries()) {
    const refuse = (why: string) => {
      throw new EvidenceRefused(
        `retention gap record ${g.id} (seqs ${g.first_seq}-${g.last_seq}) ${why}: GET /v1/events/verify would report chain_broken ` +
          "there, so the log signed no manifest. The events it claims were purged are missing from the database without a purge that signed for them.",
      );
    };
    const shaped = Number.isSafeInteger(g.first_seq) && g.first_seq > after && g.last_seq >= g.first_seq && g.purged_count === g.last_seq - g.first_seq + 1;
    if (!shaped) refuse("overlaps another or does not count the seqs it spans");
    if (!(await gapIsAuthentic(ring, g))) refuse("is not signed by this service's keys");
    if (!(await leafIs(2 * k, g.before_hash)) || !(await leafIs(2 * k + 1, g.last_hash))) refuse("does not bridge the events the log holds at its ends");
    after = g.last_seq;
  }
  return results.map(({ first_seq, last_seq, purged_count, purged_at }) => ({ first_seq, last_seq, purged_count, purged_at }));
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
    gaps: unfiltered ? await gapsThrough(env, db, job.projectId, anchor.size) : [],
    rows: files.reduce((n, f) => n + f.rows, 0),
    files: files.map(({ name, bytes, rows, sha256 }) => ({ name, bytes, rows, sha256 })),
  };
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(canonicalize(body))));
  const signer = await logSigner(env, anchor.origin);
  if (!signer) throw new Error("evidence exports need the log's signing key (RECEIPT_SIGNING_KEYS is not set)");
  const signature = await signNote(`${EVIDENCE_TYPE}\n${anchor.origin}\n${base64Encode(digest)}\n`, [signer]);
  return `${JSON.stringify({ ...body, signature }, null, 2)}\n`;
}
