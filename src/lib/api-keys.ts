import { randomAlphanumeric, sha256Hex } from "./crypto";

export const KEY_MARKER = "wtn_live";

/** `wtn_live_<prefix>_<secret>`: alphanumeric parts so the key splits cleanly on `_`. */
export interface ParsedKey {
  prefix: string;
  secret: string;
}

const KEY_PATTERN = /^wtn_live_([A-Za-z0-9]{8,32})_([A-Za-z0-9]{22,64})$/;

export function parseApiKey(key: string): ParsedKey | null {
  const m = KEY_PATTERN.exec(key);
  return m ? { prefix: m[1], secret: m[2] } : null;
}

/** 12-char prefix to find the row; 32 base62 chars of secret is ~190 bits. */
export async function generateApiKey() {
  const prefix = randomAlphanumeric(12);
  const secret = randomAlphanumeric(32);
  return { key: `${KEY_MARKER}_${prefix}_${secret}`, prefix, secretHash: await hashSecret(secret) };
}

export function hashSecret(secret: string): Promise<string> {
  return sha256Hex(secret);
}
