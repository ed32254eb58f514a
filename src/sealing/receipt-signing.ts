import { canonicalize } from "./canonical";

/**
 * RECEIPT_SIGNING_KEYS holds Ed25519 keys as `<kid>:<base64url PKCS#8>` entries
 * separated by commas. The last entry signs; the public half of every entry is
 * published at /.well-known/witness-keys.json, so receipts signed before a
 * rotation keep verifying as long as their key stays listed.
 */
export interface PublicJwk {
  kty: "OKP";
  crv: "Ed25519";
  alg: "EdDSA";
  use: "sig";
  kid: string;
  x: string;
}

export interface ReceiptKeys {
  signer: { kid: string; key: CryptoKey } | null;
  published: PublicJwk[];
}

export interface ReceiptProof {
  alg: "Ed25519";
  kid: string;
  /** base64url Ed25519 signature over the RFC 8785 text of the receipt without `proof`. */
  value: string;
}

const KID = /^[A-Za-z0-9._-]{1,64}$/;
const cache = new Map<string, Promise<ReceiptKeys>>();

export function base64urlEncode(data: ArrayBuffer | Uint8Array): string {
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

export function base64urlDecode(text: string): Uint8Array {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new Error("not base64url");
  const binary = atob(text.replaceAll("-", "+").replaceAll("_", "/"));
  return Uint8Array.from(binary, (ch) => ch.charCodeAt(0));
}

async function importEntry(entry: string): Promise<{ kid: string; key: CryptoKey; jwk: PublicJwk }> {
  const colon = entry.indexOf(":");
  const kid = entry.slice(0, colon);
  if (colon < 1 || !KID.test(kid)) throw new Error("RECEIPT_SIGNING_KEYS must look like <kid>:<base64url PKCS#8>[,...]");
  const der = base64urlDecode(entry.slice(colon + 1));
  // WebCrypto cannot derive a public key; an extractable copy's JWK carries it (x).
  const extractable = await crypto.subtle.importKey("pkcs8", der, { name: "Ed25519" }, true, ["sign"]);
  const { x } = (await crypto.subtle.exportKey("jwk", extractable)) as JsonWebKey;
  const key = await crypto.subtle.importKey("pkcs8", der, { name: "Ed25519" }, false, ["sign"]);
  return { kid, key, jwk: { kty: "OKP", crv: "Ed25519", alg: "EdDSA", use: "sig", kid, x: x! } };
}

/** Parsed once per isolate and secret value. An empty secret gives no signer and no keys. */
export function loadReceiptKeys(raw: string | undefined): Promise<ReceiptKeys> {
  const value = raw ?? "";
  let keys = cache.get(value);
  if (!keys) {
    keys = (async () => {
      const entries = await Promise.all(value.split(",").map((e) => e.trim()).filter(Boolean).map(importEntry));
      const signer = entries.length > 0 ? entries[entries.length - 1] : null;
      return { signer: signer && { kid: signer.kid, key: signer.key }, published: entries.map((e) => e.jwk) };
    })();
    keys.catch(() => cache.delete(value));
    cache.set(value, keys);
  }
  return keys;
}

export async function signReceipt<T extends Record<string, unknown>>(keys: ReceiptKeys, body: T): Promise<T & { proof: ReceiptProof }> {
  if (!keys.signer) throw new Error("RECEIPT_SIGNING_KEYS is not set; receipts cannot be signed");
  const text = new TextEncoder().encode(canonicalize(body));
  const signature = await crypto.subtle.sign({ name: "Ed25519" }, keys.signer.key, text);
  return { ...body, proof: { alg: "Ed25519", kid: keys.signer.kid, value: base64urlEncode(signature) } };
}
