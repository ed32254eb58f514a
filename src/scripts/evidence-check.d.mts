/** What checkEvidence concludes: every row unaltered and in the signed tree, or the first reason it is not. */
export type EvidenceResult =
  | {
      ok: true;
      rows: number;
      /** Rows whose personal data was lawfully erased: their commitment stands in for it. */
      erased: number;
      tree_size: number;
      /** True for an export without filters: every seq 1..tree_size was checked present or inside a signed retention gap. */
      complete: boolean;
      gaps: number;
      origin: string;
      filters: Record<string, unknown>;
    }
  | { ok: false; reason: string };

/**
 * Checks an evidence export (POST /v1/jobs with evidence: true) offline, with only
 * the log's verifier key (GET /v1/log's vkey). Runs where WebCrypto with Ed25519 is
 * the global `crypto` (browsers, Workers, Node 19+).
 */
export function checkEvidence(options: {
  /** manifest.json's text. */
  manifest: string;
  vkey: string;
  /** A file's bytes by name, or null when it is not there. */
  readFile(name: string): Promise<Uint8Array | null>;
  /** Every file present, when known: one the manifest does not list is refused. */
  names?: string[] | null;
}): Promise<EvidenceResult>;

export const EVIDENCE_TYPE: "witness.evidence.v1";
