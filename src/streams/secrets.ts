import { base64Decode, base64Encode } from "./encoding";

/**
 * Destination credentials at rest: AES-256-GCM under a key derived (HKDF-SHA256)
 * from the STREAM_SECRETS_KEY secret, with the stream id as associated data, so
 * a ciphertext copied onto another stream's row does not decrypt.
 * Stored as "v1.<base64 iv>.<base64 ciphertext+tag>".
 */
const keys = new Map<string, Promise<CryptoKey>>();

function keyOf(secret: string | undefined): Promise<CryptoKey> {
  if (!secret || secret.length < 16) throw new Error("STREAM_SECRETS_KEY is not set (at least 16 characters)");
  let key = keys.get(secret);
  if (!key) {
    key = (async () => {
      const material = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), "HKDF", false, ["deriveKey"]);
      return crypto.subtle.deriveKey(
        { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: new TextEncoder().encode("witness stream credentials v1") },
        material,
        { name: "AES-GCM", length: 256 },
        false,
        ["encrypt", "decrypt"],
      );
    })();
    keys.set(secret, key);
  }
  return key;
}

export async function sealCredential(env: Env, streamId: string, plaintext: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: new TextEncoder().encode(streamId) },
    await keyOf(env.STREAM_SECRETS_KEY),
    new TextEncoder().encode(plaintext),
  );
  return `v1.${base64Encode(iv)}.${base64Encode(new Uint8Array(sealed))}`;
}

export async function openCredential(env: Env, streamId: string, stored: string): Promise<string> {
  const [version, iv, data] = stored.split(".");
  if (version !== "v1" || !iv || !data) throw new Error("Unknown credential format");
  const plain = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: base64Decode(iv), additionalData: new TextEncoder().encode(streamId) },
    await keyOf(env.STREAM_SECRETS_KEY),
    base64Decode(data),
  );
  return new TextDecoder().decode(plain);
}
