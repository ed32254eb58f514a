/**
 * C2SP signed-note (c2sp.org/signed-note) with Ed25519 keys, compatible with
 * golang.org/x/mod/sumdb/note. A note is its text (ending in a newline), a
 * blank line, and signature lines `— <name> <base64(key ID || signature)>`.
 */
import { LogFormatError, base64Decode, base64Encode, concatBytes, utf8 } from "./encoding.ts";
import { sha256 } from "./merkle.ts";

/** Signature type byte for Ed25519 in key IDs and vkeys. */
export const SIG_TYPE_ED25519 = 0x01;
const EM_DASH = "\u2014";
/** The spec requires accepting at least 16; Go's implementation stops at 100. */
const MAX_SIGNATURES = 100;

export interface NoteSignature {
  name: string;
  /** uint32 key ID (first 4 bytes of the signature line's payload, big-endian). */
  keyId: number;
  /** The signature proper, without the key ID. */
  signature: Uint8Array;
}

export interface Note {
  /** Includes the final newline, not the blank separator line. */
  text: string;
  signatures: NoteSignature[];
}

export interface NoteVerifier {
  name: string;
  keyId: number;
  publicKey: Uint8Array;
  verify(message: Uint8Array, signature: Uint8Array): Promise<boolean>;
}

export interface NoteSigner {
  name: string;
  keyId: number;
  publicKey: Uint8Array;
  sign(message: Uint8Array): Promise<Uint8Array>;
}

export type NoteVerification =
  | { ok: true; text: string; verified: NoteSignature[]; unverified: NoteSignature[] }
  | { ok: false; reason: string };

/** Non-empty, no Unicode spaces, no plus; U+0085 is listed because JS \s omits it. */
export function isValidKeyName(name: string): boolean {
  return name.length > 0 && !/[\s\u0085+]/u.test(name) && !/\p{Cc}|\p{Cs}/u.test(name);
}

function checkText(text: string): void {
  // Lone surrogates would be re-encoded as U+FFFD, so the signed bytes would differ.
  if (/\p{Cs}/u.test(text)) throw new LogFormatError("note is not valid UTF-8");
  if (/[\u0000-\u0009\u000b-\u001f]/.test(text)) throw new LogFormatError("note contains control characters");
}

/** key ID = SHA-256(name || 0x0A || type || public key)[:4] as a big-endian uint32. */
export async function noteKeyId(name: string, type: number, publicKey: Uint8Array): Promise<number> {
  const digest = await sha256(concatBytes(utf8.encode(name), new Uint8Array([0x0a, type]), publicKey));
  return new DataView(digest.buffer, digest.byteOffset).getUint32(0);
}

const keyIdHex = (id: number): string => id.toString(16).padStart(8, "0");

/** Parses a note without checking signatures. Throws LogFormatError. */
export function parseNote(input: string | Uint8Array): Note {
  const note = typeof input === "string" ? input : utf8.decode(input);
  checkText(note);
  if (!note.endsWith("\n")) throw new LogFormatError("note does not end in a newline");
  const split = note.lastIndexOf("\n\n");
  if (split < 0) throw new LogFormatError("note has no signature block");
  const text = note.slice(0, split + 1);
  const lines = note.slice(split + 2, -1).split("\n");
  if (lines.length > MAX_SIGNATURES) throw new LogFormatError("note has too many signatures");
  const signatures = lines.map((line) => {
    const parts = line.split(" ");
    if (parts.length !== 3 || parts[0] !== EM_DASH || !isValidKeyName(parts[1])) {
      throw new LogFormatError("malformed signature line");
    }
    const payload = base64Decode(parts[2]);
    if (payload.length < 5) throw new LogFormatError("signature too short");
    const keyId = new DataView(payload.buffer, payload.byteOffset).getUint32(0);
    return { name: parts[1], keyId, signature: payload.slice(4) };
  });
  return { text, signatures };
}

export function formatSignatureLine(sig: NoteSignature): string {
  const id = new Uint8Array(4);
  new DataView(id.buffer).setUint32(0, sig.keyId);
  return `${EM_DASH} ${sig.name} ${base64Encode(concatBytes(id, sig.signature))}\n`;
}

export function formatNote(note: Note): string {
  if (!note.text.endsWith("\n")) throw new LogFormatError("note text must end in a newline");
  if (note.signatures.length === 0) throw new LogFormatError("a note needs a signature");
  return `${note.text}\n${note.signatures.map(formatSignatureLine).join("")}`;
}

/** `<name>+<hex key ID>+<base64(0x01 || public key)>`, the form sumdb/note calls a verifier key. */
export async function formatVkey(name: string, publicKey: Uint8Array): Promise<string> {
  if (!isValidKeyName(name)) throw new LogFormatError("invalid key name");
  if (publicKey.length !== 32) throw new LogFormatError("Ed25519 public key must be 32 bytes");
  const id = await noteKeyId(name, SIG_TYPE_ED25519, publicKey);
  return `${name}+${keyIdHex(id)}+${base64Encode(concatBytes(new Uint8Array([SIG_TYPE_ED25519]), publicKey))}`;
}

/** Parses an Ed25519 vkey; the key ID must match the name and key. Throws LogFormatError. */
export async function parseVkey(vkey: string): Promise<NoteVerifier> {
  // The base64 key may itself contain "+", so only the first two separate fields.
  const m = /^([^+]*)\+([0-9a-f]{8})\+(.*)$/s.exec(vkey);
  if (!m || !isValidKeyName(m[1])) throw new LogFormatError("malformed vkey");
  const [, name, idHex, keyB64] = m;
  const key = base64Decode(keyB64);
  if (key.length !== 33 || key[0] !== SIG_TYPE_ED25519) throw new LogFormatError("vkey is not a 32-byte Ed25519 key");
  const publicKey = key.slice(1);
  const keyId = await noteKeyId(name, SIG_TYPE_ED25519, publicKey);
  if (keyIdHex(keyId) !== idHex) throw new LogFormatError("vkey key ID does not match its name and key");
  let imported: Promise<CryptoKey> | undefined;
  return {
    name,
    keyId,
    publicKey,
    async verify(message, signature) {
      if (signature.length !== 64) return false;
      imported ??= crypto.subtle.importKey("raw", publicKey, { name: "Ed25519" }, false, ["verify"]);
      return crypto.subtle.verify({ name: "Ed25519" }, await imported, signature, message);
    },
  };
}

/** A signer from a WebCrypto Ed25519 private key and its raw public key. */
export async function createNoteSigner(name: string, privateKey: CryptoKey, publicKey: Uint8Array): Promise<NoteSigner> {
  if (!isValidKeyName(name)) throw new LogFormatError("invalid key name");
  if (publicKey.length !== 32) throw new LogFormatError("Ed25519 public key must be 32 bytes");
  const keyId = await noteKeyId(name, SIG_TYPE_ED25519, publicKey);
  return {
    name,
    keyId,
    publicKey,
    sign: async (message) => new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, privateKey, message)),
  };
}

/** A signer from PKCS#8 DER bytes (the RECEIPT_SIGNING_KEYS form). */
export async function noteSignerFromPkcs8(name: string, pkcs8: Uint8Array): Promise<NoteSigner> {
  // WebCrypto cannot derive a public key; an extractable copy's JWK carries it (x).
  const extractable = await crypto.subtle.importKey("pkcs8", pkcs8, { name: "Ed25519" }, true, ["sign"]);
  const jwk = (await crypto.subtle.exportKey("jwk", extractable)) as JsonWebKey;
  const x = base64Decode(jwk.x!.replaceAll("-", "+").replaceAll("_", "/") + "=");
  const key = await crypto.subtle.importKey("pkcs8", pkcs8, { name: "Ed25519" }, false, ["sign"]);
  return createNoteSigner(name, key, x);
}

/**
 * Signs `text` and returns the note. `existing` signatures (e.g. witness
 * cosignatures) come first, minus any by the same key as a new one, as in
 * sumdb/note's Sign.
 */
export async function signNote(text: string, signers: NoteSigner[], existing: NoteSignature[] = []): Promise<string> {
  checkText(text);
  const message = utf8.encode(text);
  const fresh = await Promise.all(
    signers.map(async (s) => ({ name: s.name, keyId: s.keyId, signature: await s.sign(message) })),
  );
  const kept = existing.filter((e) => !fresh.some((f) => f.name === e.name && f.keyId === e.keyId));
  return formatNote({ text, signatures: [...kept, ...fresh] });
}

/**
 * Opens a note with trusted keys. Signatures by unknown keys (name and ID
 * not both matching) are ignored; a bad signature by a known key rejects the
 * note (the spec's SHOULD); at least one known signature must verify.
 */
export async function verifyNote(
  input: string | Uint8Array,
  verifiers: NoteVerifier | readonly NoteVerifier[],
): Promise<NoteVerification> {
  let note: Note;
  try {
    note = parseNote(input);
  } catch (err) {
    return { ok: false, reason: `malformed note: ${(err as Error).message}` };
  }
  const keys = Array.isArray(verifiers) ? verifiers : [verifiers as NoteVerifier];
  const message = utf8.encode(note.text);
  const verified: NoteSignature[] = [];
  const unverified: NoteSignature[] = [];
  for (const sig of note.signatures) {
    const key = keys.find((k) => k.name === sig.name && k.keyId === sig.keyId);
    if (!key) {
      unverified.push(sig);
      continue;
    }
    if (!(await key.verify(message, sig.signature))) {
      return { ok: false, reason: `invalid signature for key ${sig.name}+${keyIdHex(sig.keyId)}` };
    }
    if (!verified.some((v) => v.name === sig.name && v.keyId === sig.keyId)) verified.push(sig);
  }
  if (verified.length === 0) return { ok: false, reason: "no signature by a known key" };
  return { ok: true, text: note.text, verified, unverified };
}
