import { hmacHex, importHmacKey } from "../lib/crypto";

/**
 * SIGNING_KEYS holds every HMAC key version as `<version>:<secret>` pairs
 * separated by commas, e.g. `1:oldsecret,2:newsecret`. The highest version
 * signs; every version stays available to check older signatures.
 */
export interface SigningKeyring {
  newest: number;
  keys: Map<number, CryptoKey>;
}

const cache = new Map<string, Promise<SigningKeyring>>();

export function parseSigningKeys(raw: string | undefined): Map<number, string> {
  const out = new Map<number, string>();
  for (const part of (raw ?? "").split(",")) {
    const entry = part.trim();
    if (!entry) continue;
    const colon = entry.indexOf(":");
    const version = Number(entry.slice(0, colon));
    const secret = entry.slice(colon + 1);
    if (colon < 1 || !Number.isInteger(version) || version < 1 || secret.length < 16) {
      throw new Error("SIGNING_KEYS must look like 1:<secret of 16+ chars>[,2:<secret>...]");
    }
    out.set(version, secret);
  }
  if (out.size === 0) throw new Error("SIGNING_KEYS is not set");
  return out;
}

/** Imports each key once per isolate: importKey is far costlier than a signature. */
export function loadKeyring(raw: string | undefined): Promise<SigningKeyring> {
  const key = raw ?? "";
  let ring = cache.get(key);
  if (!ring) {
    ring = (async () => {
      const secrets = parseSigningKeys(raw);
      const keys = new Map<number, CryptoKey>();
      for (const [version, secret] of secrets) keys.set(version, await importHmacKey(secret));
      return { newest: Math.max(...keys.keys()), keys };
    })();
    ring.catch(() => cache.delete(key));
    cache.set(key, ring);
  }
  return ring;
}

export async function sign(ring: SigningKeyring, payload: string): Promise<string> {
  return `v${ring.newest}:${await hmacHex(ring.keys.get(ring.newest)!, payload)}`;
}

/** False for a missing, malformed or unknown-version signature. */
export async function checkSignature(ring: SigningKeyring, payload: string, signature: string | null): Promise<boolean> {
  const match = signature ? /^v(\d+):([0-9a-f]{64})$/.exec(signature) : null;
  const key = match ? ring.keys.get(Number(match[1])) : undefined;
  if (!match || !key) return false;
  return (await hmacHex(key, payload)) === match[2];
}
