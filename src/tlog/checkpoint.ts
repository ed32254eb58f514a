/**
 * C2SP tlog-checkpoint (c2sp.org/tlog-checkpoint): the note text
 * `<origin>\n<tree size>\n<base64 root hash>\n[<extension line>\n...]`,
 * signed as a signed-note by the log's key, whose name is the origin.
 */
import { LogFormatError, base64DecodeHash, base64Encode, isCount, parseDecimal } from "./encoding.ts";
import { type NoteSignature, type NoteSigner, type NoteVerifier, parseVkey, signNote, verifyNote } from "./note.ts";

export interface Checkpoint {
  origin: string;
  size: number;
  rootHash: Uint8Array;
  /** Opaque, non-empty lines after the root hash; the spec discourages them. */
  extensions?: string[];
}

export type CheckpointVerification =
  | { ok: true; checkpoint: Checkpoint; text: string; verified: NoteSignature[]; unverified: NoteSignature[] }
  | { ok: false; reason: string };

/** Signed notes allow no control characters but newline, so neither can a checkpoint. */
const CONTROL = /[\u0000-\u0009\u000b-\u001f]/;

/** The checkpoint's note text (unsigned body). */
export function formatCheckpoint(cp: Checkpoint): string {
  const ext = cp.extensions ?? [];
  if (cp.origin.length === 0 || CONTROL.test(cp.origin) || cp.origin.includes("\n")) throw new LogFormatError("invalid origin");
  if (!isCount(cp.size)) throw new LogFormatError("invalid tree size");
  if (cp.rootHash.length !== 32) throw new LogFormatError("root hash must be 32 bytes");
  if (ext.some((line) => line.length === 0 || CONTROL.test(line) || line.includes("\n"))) throw new LogFormatError("invalid extension line");
  return [cp.origin, String(cp.size), base64Encode(cp.rootHash), ...ext].map((l) => `${l}\n`).join("");
}

/**
 * Strict parse of a checkpoint body: at least three non-empty lines, a size
 * without leading zeros, a canonical base64 32-byte hash. Throws LogFormatError.
 */
export function parseCheckpoint(text: string): Checkpoint {
  if (!text.endsWith("\n")) throw new LogFormatError("checkpoint does not end in a newline");
  if (CONTROL.test(text)) throw new LogFormatError("checkpoint contains control characters");
  const lines = text.slice(0, -1).split("\n");
  if (lines.length < 3) throw new LogFormatError("checkpoint has fewer than three lines");
  if (lines.some((l) => l.length === 0)) throw new LogFormatError("checkpoint has an empty line");
  const [origin, size, root, ...extensions] = lines;
  const cp: Checkpoint = { origin, size: parseDecimal(size, "tree size"), rootHash: base64DecodeHash(root) };
  if (extensions.length > 0) cp.extensions = extensions;
  return cp;
}

/** Signs a checkpoint; the signer's key name should be the origin. */
export function signCheckpoint(cp: Checkpoint, signer: NoteSigner, existing: NoteSignature[] = []): Promise<string> {
  return signNote(formatCheckpoint(cp), [signer], existing);
}

/**
 * Verifies a signed checkpoint against the log's key (a vkey string or a
 * parsed verifier) and parses it. The origin must equal the key's name, so a
 * key cannot vouch for another log's checkpoints.
 */
export async function verifyCheckpoint(
  note: string | Uint8Array,
  key: string | NoteVerifier,
): Promise<CheckpointVerification> {
  const verifier = typeof key === "string" ? await parseVkey(key) : key;
  const opened = await verifyNote(note, verifier);
  if (!opened.ok) return opened;
  let checkpoint: Checkpoint;
  try {
    checkpoint = parseCheckpoint(opened.text);
  } catch (err) {
    return { ok: false, reason: `malformed checkpoint: ${(err as Error).message}` };
  }
  if (checkpoint.origin !== verifier.name) {
    return { ok: false, reason: `checkpoint origin ${JSON.stringify(checkpoint.origin)} is not the key name ${JSON.stringify(verifier.name)}` };
  }
  return { ok: true, checkpoint, text: opened.text, verified: opened.verified, unverified: opened.unverified };
}
