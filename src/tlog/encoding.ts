/**
 * Byte and text encodings shared by the transparency-log formats. Everything
 * here is strict: the formats are signed or hashed, so two spellings of one
 * value would let a text change without its meaning changing.
 */

/** Thrown by parsers on malformed input; `message` says what was wrong. */
export class LogFormatError extends Error {
  override name = "LogFormatError";
}

export const HASH_SIZE = 32;

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Standard base64 (RFC 4648 section 4) with padding. */
export function base64Encode(bytes: Uint8Array): string {
  let binary = "";
  // Chunked so very large inputs do not overflow the argument limit.
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

/**
 * Decodes canonical standard base64 only: padding required and unused bits
 * zero, so each byte string has exactly one accepted spelling.
 */
export function base64Decode(text: string): Uint8Array {
  if (!BASE64.test(text)) throw new LogFormatError("not canonical base64");
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  if (base64Encode(bytes) !== text) throw new LogFormatError("not canonical base64");
  return bytes;
}

/** Decodes a base64 SHA-256 hash, rejecting any other length. */
export function base64DecodeHash(text: string): Uint8Array {
  const bytes = base64Decode(text);
  if (bytes.length !== HASH_SIZE) throw new LogFormatError(`hash is ${bytes.length} bytes, want ${HASH_SIZE}`);
  return bytes;
}

export function hexEncode(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += b.toString(16).padStart(2, "0");
  return out;
}

/** Nibble value by char code, -1 for anything that is not a hex digit. */
const NIBBLE = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) {
  NIBBLE["0123456789abcdef".charCodeAt(i)] = i;
  NIBBLE["0123456789ABCDEF".charCodeAt(i)] = i;
}

/** A table lookup per digit: the ledger decodes every event's hash on the ingest path. */
export function hexDecode(text: string): Uint8Array {
  if (text.length % 2 !== 0) throw new LogFormatError("not hex");
  const bytes = new Uint8Array(text.length / 2);
  for (let i = 0; i < bytes.length; i++) {
    const hi = NIBBLE[text.charCodeAt(2 * i)] ?? -1;
    const lo = NIBBLE[text.charCodeAt(2 * i + 1)] ?? -1;
    if (hi < 0 || lo < 0) throw new LogFormatError("not hex");
    bytes[i] = (hi << 4) | lo;
  }
  return bytes;
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * Parses a decimal with no sign and no leading zeros ("0" itself is fine),
 * the spelling every C2SP format requires. Values past 2^53 - 1 are refused
 * because a JS number could not hold them exactly.
 */
export function parseDecimal(text: string, what: string): number {
  if (!/^(?:0|[1-9][0-9]*)$/.test(text)) throw new LogFormatError(`${what} is not a canonical decimal`);
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw new LogFormatError(`${what} is too large`);
  return n;
}

/** A non-negative safe integer, as tree sizes and indexes must be. */
export function isCount(n: unknown): n is number {
  return typeof n === "number" && Number.isSafeInteger(n) && n >= 0;
}

export const utf8 = {
  encode: (text: string): Uint8Array => new TextEncoder().encode(text),
  /** Throws on invalid UTF-8 rather than substituting U+FFFD, which would change signed bytes. */
  decode: (bytes: Uint8Array): string => {
    try {
      return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
    } catch {
      throw new LogFormatError("not valid UTF-8");
    }
  },
};
