/**
 * C2SP tlog-cosignature (Ed25519, type 0x04) and the tlog-witness
 * add-checkpoint wire format. A cosignature is a note signature line on a
 * checkpoint whose payload is key ID || u64 timestamp || Ed25519 signature of
 * "cosignature/v1\ntime <t>\n" followed by the checkpoint body.
 */
import { LogFormatError, base64Decode, base64DecodeHash, base64Encode, concatBytes, parseDecimal, utf8 } from "./encoding.ts";
import { type NoteSignature, formatSignatureLine, isValidKeyName, noteKeyId, parseNote } from "./note.ts";

export const SIG_TYPE_COSIGNATURE = 0x04;
/** tlog-witness: a client must not send more, and a witness need not read more. */
export const MAX_ADD_CHECKPOINT_PROOF = 63;

export interface Cosigner {
  name: string;
  keyId: number;
  publicKey: Uint8Array;
}

export interface CosignerSigner extends Cosigner {
  /** Returns the signature line payload (timestamp || signature), without the key ID. */
  cosign(checkpointBody: string, timestamp: number): Promise<Uint8Array>;
}

const keyIdHex = (id: number): string => id.toString(16).padStart(8, "0");

/** The bytes an Ed25519 cosigner signs; `body` is the checkpoint text without signatures. */
export function cosignatureMessage(body: string, timestamp: number): Uint8Array {
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) throw new LogFormatError("invalid cosignature timestamp");
  return utf8.encode(`cosignature/v1\ntime ${timestamp}\n${body}`);
}

export async function formatCosignerVkey(name: string, publicKey: Uint8Array): Promise<string> {
  if (!isValidKeyName(name) || publicKey.length !== 32) throw new LogFormatError("invalid cosigner name or key");
  const id = await noteKeyId(name, SIG_TYPE_COSIGNATURE, publicKey);
  return `${name}+${keyIdHex(id)}+${base64Encode(concatBytes(new Uint8Array([SIG_TYPE_COSIGNATURE]), publicKey))}`;
}

/** Parses a witness's vkey (type 0x04); the key ID must match. Throws LogFormatError. */
export async function parseCosignerVkey(vkey: string): Promise<Cosigner> {
  const m = /^([^+]*)\+([0-9a-f]{8})\+(.*)$/s.exec(vkey);
  if (!m || !isValidKeyName(m[1])) throw new LogFormatError("malformed cosigner vkey");
  const key = base64Decode(m[3]);
  if (key.length !== 33 || key[0] !== SIG_TYPE_COSIGNATURE) throw new LogFormatError("not an Ed25519 cosigner key (type 0x04)");
  const publicKey = key.slice(1);
  const keyId = await noteKeyId(m[1], SIG_TYPE_COSIGNATURE, publicKey);
  if (keyIdHex(keyId) !== m[2]) throw new LogFormatError("cosigner vkey key ID does not match its name and key");
  return { name: m[1], keyId, publicKey };
}

/** A cosigner from a WebCrypto Ed25519 private key (witnesses; the tests play one). */
export async function createCosigner(name: string, privateKey: CryptoKey, publicKey: Uint8Array): Promise<CosignerSigner> {
  const keyId = await noteKeyId(name, SIG_TYPE_COSIGNATURE, publicKey);
  return {
    name,
    keyId,
    publicKey,
    async cosign(body, timestamp) {
      const sig = new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, privateKey, cosignatureMessage(body, timestamp)));
      const ts = new Uint8Array(8);
      new DataView(ts.buffer).setBigUint64(0, BigInt(timestamp));
      return concatBytes(ts, sig);
    },
  };
}

/** The signature line a cosigner adds to a checkpoint body. */
export async function cosignatureLine(signer: CosignerSigner, body: string, timestamp: number): Promise<string> {
  return formatSignatureLine({ name: signer.name, keyId: signer.keyId, signature: await signer.cosign(body, timestamp) });
}

/** Checks one signature line's payload (timestamp || signature) as a cosignature of `body`. */
export async function verifyCosignature(cosigner: Cosigner, body: string, sig: NoteSignature): Promise<boolean> {
  if (sig.name !== cosigner.name || sig.keyId !== cosigner.keyId || sig.signature.length !== 72) return false;
  const timestamp = new DataView(sig.signature.buffer, sig.signature.byteOffset).getBigUint64(0);
  if (timestamp > BigInt(Number.MAX_SAFE_INTEGER)) return false;
  const key = await crypto.subtle.importKey("raw", cosigner.publicKey, { name: "Ed25519" }, false, ["verify"]);
  return crypto.subtle.verify({ name: "Ed25519" }, key, sig.signature.slice(8), cosignatureMessage(body, Number(timestamp)));
}

/**
 * The valid cosignature lines by `cosigner` among `lines` (a witness's
 * add-checkpoint answer) for checkpoint `body`; lines by other keys are
 * ignored, as the protocol asks.
 */
export async function validCosignatureLines(cosigner: Cosigner, body: string, lines: string): Promise<string[]> {
  let sigs: NoteSignature[];
  try {
    sigs = parseNote(`${body}\n${lines}`).signatures;
  } catch {
    return [];
  }
  const ok: string[] = [];
  for (const sig of sigs) if (await verifyCosignature(cosigner, body, sig)) ok.push(formatSignatureLine(sig));
  return ok;
}

/** tlog-witness add-checkpoint request body: `old <size>`, proof lines, a blank line, the signed checkpoint. */
export function formatAddCheckpoint(oldSize: number, proof: readonly Uint8Array[], checkpoint: string): string {
  if (proof.length > MAX_ADD_CHECKPOINT_PROOF) throw new LogFormatError("consistency proof too long");
  return [`old ${oldSize}`, ...proof.map(base64Encode), "", checkpoint].join("\n");
}

export interface AddCheckpoint {
  oldSize: number;
  proof: Uint8Array[];
  checkpoint: string;
}

/** Strict parse of an add-checkpoint body. Throws LogFormatError. */
export function parseAddCheckpoint(body: string): AddCheckpoint {
  const lines = body.split("\n");
  if (!lines[0]?.startsWith("old ")) throw new LogFormatError("missing old size line");
  const oldSize = parseDecimal(lines[0].slice(4), "old size");
  const proof: Uint8Array[] = [];
  let at = 1;
  for (; at < lines.length && lines[at] !== ""; at++) {
    if (proof.length === MAX_ADD_CHECKPOINT_PROOF) throw new LogFormatError("too many proof lines");
    proof.push(base64DecodeHash(lines[at]));
  }
  if (at >= lines.length) throw new LogFormatError("missing blank line before the checkpoint");
  return { oldSize, proof, checkpoint: lines.slice(at + 1).join("\n") };
}

/** The body of a 409 answer (`text/x.tlog.size`): the witness's latest size. */
export function parseTreeSizeBody(body: string): number {
  if (!body.endsWith("\n")) throw new LogFormatError("size body must end in a newline");
  return parseDecimal(body.slice(0, -1), "tree size");
}
