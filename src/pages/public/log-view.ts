import { ledgerOf } from "../../chain/ledger";
import { verifyCheckpoint } from "../../tlog/checkpoint";
import { parseCosignerVkey, verifyCosignature } from "../../tlog/cosignature";
import { base64Encode } from "../../tlog/encoding";
import { forgetLogAddress, projectOfLog } from "../../log/log-directory";
import { logSigner, logVkey } from "../../log/log-identity";
import { parseNote } from "../../tlog/note";
import { parseWitnesses } from "../../log/witness-client";

export interface Cosignature {
  name: string;
  keyId: string;
  /** When the witness cosigned (its own clock), ISO; null when the line carries no cosignature/v1 timestamp. */
  at: string | null;
  /** Checked against the key WITNESSES names for it; false when it names none or the check failed. */
  verified: boolean;
}

export type LogView =
  | { kind: "unknown" }
  | { kind: "unsigned"; logId: string }
  | {
      kind: "log";
      logId: string;
      origin: string;
      size: number;
      rootHash: string;
      /** The served checkpoint: signed note text, cosignatures included. */
      note: string;
      vkey: string;
      /** The log's own signature checks against vkey (a sanity check of what is served). */
      signed: boolean;
      cosignatures: Cosignature[];
    };

const hex = (n: number) => n.toString(16).padStart(8, "0");

function cosignedAt(signature: Uint8Array): string | null {
  if (signature.length !== 72) return null;
  const seconds = new DataView(signature.buffer, signature.byteOffset).getBigUint64(0);
  return seconds > BigInt(8.64e12) ? null : new Date(Number(seconds) * 1000).toISOString();
}

/**
 * What GET /logs/<log_id> shows: the checkpoint anyone can fetch from
 * /checkpoint, read apart. Public by design (hashes and sizes only); one
 * control-database lookup (cached) and one ledger call, like /checkpoint.
 */
export async function loadLogView(env: Env, logId: string): Promise<LogView> {
  const projectId = await projectOfLog(env, logId);
  if (!projectId) return { kind: "unknown" };
  const { mine, note } = await ledgerOf(env, projectId).logCheckpoint(logId);
  if (!mine) {
    forgetLogAddress(logId);
    return { kind: "unknown" };
  }
  if (note === null) return { kind: "unsigned", logId };
  const parsed = parseNote(note);
  const origin = parsed.text.slice(0, parsed.text.indexOf("\n"));
  const signer = await logSigner(env, origin);
  if (!signer) return { kind: "unsigned", logId };
  const vkey = await logVkey(signer);
  const checked = await verifyCheckpoint(note, vkey);
  let witnesses: ReturnType<typeof parseWitnesses> = [];
  try {
    witnesses = parseWitnesses(env.WITNESSES);
  } catch {
    // A malformed WITNESSES is reported by the log's upkeep; here it only means no cosignature is vouched for.
  }
  const cosignatures: Cosignature[] = [];
  for (const sig of parsed.signatures) {
    if (sig.name === origin) continue;
    const config = witnesses.find((w) => w.name === sig.name);
    let verified = false;
    if (config) {
      try {
        verified = await verifyCosignature(await parseCosignerVkey(config.vkey), parsed.text, sig);
      } catch {
        verified = false;
      }
    }
    cosignatures.push({ name: sig.name, keyId: hex(sig.keyId), at: cosignedAt(sig.signature), verified });
  }
  const cp = checked.ok ? checked.checkpoint : null;
  const lines = parsed.text.split("\n");
  return {
    kind: "log",
    logId,
    origin,
    size: cp?.size ?? Number(lines[1]),
    rootHash: cp ? base64Encode(cp.rootHash) : lines[2],
    note,
    vkey,
    signed: checked.ok,
    cosignatures,
  };
}
