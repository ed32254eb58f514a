import { loadKeyring } from "../sealing/signing-keys";

/**
 * The key of segment summaries (archive-summary.ts), derived from a
 * SIGNING_KEYS version: elements are hashed under it, so a filter holds no
 * clear personal data and nobody without the secret can test a value.
 */
interface SummaryKey {
  version: number;
  key: CryptoKey;
}

const keys = new Map<string, Promise<SummaryKey>>();

/** The summary key of one SIGNING_KEYS version (the newest by default), derived once per isolate. */
export function summaryKey(env: Env, version?: number): Promise<SummaryKey> {
  const id = `${env.SIGNING_KEYS}|${version ?? "newest"}`;
  let found = keys.get(id);
  if (!found) {
    found = (async () => {
      const ring = await loadKeyring(env.SIGNING_KEYS);
      const v = version ?? ring.newest;
      const parent = ring.keys.get(v);
      if (!parent) throw new Error(`no signing key version ${v} for a segment summary`);
      const raw = await crypto.subtle.sign("HMAC", parent, new TextEncoder().encode("witness.segment-summary-key.v1"));
      const key = await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
      return { version: v, key };
    })();
    found.catch(() => keys.delete(id));
    keys.set(id, found);
  }
  return found;
}

const UTF8 = new TextEncoder();

/** The bit positions (as 32-bit words) an element sets: its HMAC under the summary key. */
export async function positions(key: CryptoKey, value: string): Promise<Uint32Array> {
  return new Uint32Array(await crypto.subtle.sign("HMAC", key, UTF8.encode(value)));
}
