const encoder = new TextEncoder();

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
const HEX_HI = HEX.map((h) => h.charCodeAt(0));
const HEX_LO = HEX.map((h) => h.charCodeAt(1));

// A table lookup per byte: sealing and verify hex-encode several digests per event.
export function toHex(buffer: ArrayBuffer | Uint8Array): string {
  const bytes = buffer instanceof Uint8Array ? buffer : new Uint8Array(buffer);
  let out = "";
  for (let i = 0; i < bytes.length; i++) out += HEX[bytes[i]];
  return out;
}

/** toHex(buffer) === text, without building the hex string (verify compares several per event); no early exit. */
export function hexEquals(buffer: ArrayBuffer, text: string | null): boolean {
  const bytes = new Uint8Array(buffer);
  if (text === null || text.length !== bytes.length * 2) return false;
  let diff = 0;
  for (let i = 0; i < bytes.length; i++) {
    diff |= (text.charCodeAt(2 * i) ^ HEX_HI[bytes[i]]) | (text.charCodeAt(2 * i + 1) ^ HEX_LO[bytes[i]]);
  }
  return diff === 0;
}

export async function sha256Hex(data: string | Uint8Array): Promise<string> {
  return toHex(await crypto.subtle.digest("SHA-256", typeof data === "string" ? encoder.encode(data) : data));
}

export function importHmacKey(secret: string): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
}

export async function hmacHex(key: CryptoKey, text: string): Promise<string> {
  return toHex(await crypto.subtle.sign("HMAC", key, encoder.encode(text)));
}

export function randomHex(bytes: number): string {
  return toHex(crypto.getRandomValues(new Uint8Array(bytes)));
}

/**
 * A version 7 UUID (RFC 9562): 48 bits of Unix milliseconds, then 74 random
 * bits (42 when `tail` fills the last 32). Event ids in time order land together in D1's unique index on id;
 * random v4 ids dirtied one index page per event of every batch. The id
 * reveals when the event was received, to the millisecond.
 */
export function uuidV7(now = Date.now(), tail?: number): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  for (let i = 5, t = now; i >= 0; i--, t = Math.floor(t / 256)) b[i] = t % 256;
  // The last 32 bits may carry a caller's tag (src/model/event-id.ts); 42 random bits remain.
  if (tail !== undefined) for (let i = 15, t = tail >>> 0; i >= 12; i--, t = Math.floor(t / 256)) b[i] = t % 256;
  b[6] = 0x70 | (b[6] & 0x0f);
  b[8] = 0x80 | (b[8] & 0x3f);
  const h = toHex(b);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const ALPHANUMERIC = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** Uniform base62 string (rejection sampling, no modulo bias). */
export function randomAlphanumeric(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const byte of crypto.getRandomValues(new Uint8Array(length * 2))) {
      if (byte < 248 && out.length < length) out += ALPHANUMERIC[byte % 62];
    }
  }
  return out;
}

/** Compares two equal-purpose strings without leaking where they differ. */
export function timingSafeEqual(a: string, b: string): boolean {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  if (x.length !== y.length) return false;
  return crypto.subtle.timingSafeEqual(x, y);
}

/**
 * UTF-8 byte length without encoding (ingest measures every field against its
 * cap). Lone surrogates count 3 bytes, as TextEncoder writes them as U+FFFD.
 */
export function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) bytes += 1;
    else if (c >= 0xd800 && c <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 2; // the pair: 2 UTF-16 units, 4 bytes
      i++;
    } else bytes += 2;
  }
  return bytes;
}
