import { sha256Hex } from "../lib/crypto";
import { companionKey, type CompanionFormat, type Segment } from "./archive-segments";
import type { TrustedCompanions } from "./companion-records";

/**
 * Export companions checked against what the project's ledger recorded for
 * their segment (companion-records.ts): exports serve a companion only on a
 * match, and verify reports one that does not match as archive_damaged.
 */

const FORMATS: CompanionFormat[] = ["csv", "json"];

/** The ledger's records for these segments, in one call. */
export async function trustedCompanions(env: Env, projectId: string, segments: Segment[]): Promise<TrustedCompanions> {
  return env.LEDGER.get(env.LEDGER.idFromName(projectId)).companionHashes(segments.map((s) => s.sha256));
}

/**
 * Why a segment's stored companions are not the ones the ledger recorded, or
 * null when they are (or when the ledger has no record yet: a segment sealed
 * before the records existed, or just rewritten by an erasure, until the
 * archiver renders its companions again; exports take its rows meanwhile).
 * R2 keeps the SHA-256 every companion was written with and refuses a write
 * whose bytes do not match the hash it names, so a HEAD is enough; an object
 * stored without a hash (not by the archiver) is read and hashed.
 */
export async function checkCompanions(env: Env, segment: Segment, trusted: Record<CompanionFormat, string> | undefined): Promise<string | null> {
  if (!trusted) return null;
  const found = await Promise.all(
    FORMATS.map(async (format) => {
      const key = companionKey(segment.object_key, format);
      const head = await env.ARCHIVE.head(key);
      if (!head) return `its ${format} export companion is missing`;
      let sha = head.checksums.toJSON().sha256;
      if (!sha) {
        const object = await env.ARCHIVE.get(key);
        sha = object ? await sha256Hex(new Uint8Array(await object.arrayBuffer())) : undefined;
      }
      return sha === trusted[format] ? null : `its ${format} export companion differs from the one the ledger recorded`;
    }),
  );
  return found.find((why) => why !== null) ?? null;
}
