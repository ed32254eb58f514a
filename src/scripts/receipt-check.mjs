// Offline check of a Witness receipt's Ed25519 proof. Plain JavaScript on
// WebCrypto alone, so it runs the same in Node 22 (npm run receipt:verify) and
// in the tests; no database, no API key, no network.

/** RFC 8785 (JCS): sorted keys, ES number and string serialization. */
export function canonicalize(value) {
  if (value === null || typeof value === "boolean") return JSON.stringify(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError("JCS cannot encode a non-finite number");
    return Object.is(value, -0) ? "0" : String(value);
  }
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalize).join(",")}]`;
  if (typeof value === "object") {
    const keys = Object.keys(value).filter((k) => value[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalize(value[k])}`).join(",")}}`;
  }
  throw new TypeError(`JCS cannot encode a ${typeof value}`);
}

function base64urlDecode(text) {
  if (typeof text !== "string" || !/^[A-Za-z0-9_-]+$/.test(text)) throw new Error("not base64url");
  return Uint8Array.from(atob(text.replaceAll("-", "+").replaceAll("_", "/")), (c) => c.charCodeAt(0));
}

/**
 * Public keys from what an operator hands out: the /.well-known/witness-keys.json
 * document (a JWK set), one JWK, `<kid>:<x>` or a bare base64url key `x`.
 */
export function parsePublicKeys(text) {
  const trimmed = text.trim();
  if (trimmed.startsWith("{")) {
    const doc = JSON.parse(trimmed);
    const list = Array.isArray(doc.keys) ? doc.keys : [doc];
    return list.filter((k) => k && k.kty === "OKP" && k.crv === "Ed25519" && typeof k.x === "string").map((k) => ({ kid: k.kid ?? null, x: k.x }));
  }
  const colon = trimmed.indexOf(":");
  return [colon > 0 ? { kid: trimmed.slice(0, colon), x: trimmed.slice(colon + 1) } : { kid: null, x: trimmed }];
}

/** Accepts the receipt itself or the API's `{ data: receipt }` envelope. */
export function unwrapReceipt(doc) {
  return doc && typeof doc === "object" && doc.data && typeof doc.data === "object" && !doc.type ? doc.data : doc;
}

/** { ok: true, kid } when the proof matches the receipt's fields under one of the keys. */
export async function verifyReceipt(receipt, keys) {
  if (!receipt || typeof receipt !== "object" || receipt.type !== "witness.receipt.v1") {
    return { ok: false, reason: "not a witness.receipt.v1 receipt" };
  }
  const { proof, ...body } = receipt;
  if (!proof || proof.alg !== "Ed25519" || typeof proof.kid !== "string" || typeof proof.value !== "string") {
    return { ok: false, reason: "the receipt carries no Ed25519 proof" };
  }
  const key = keys.find((k) => k.kid === proof.kid) ?? keys.find((k) => k.kid === null);
  if (!key) return { ok: false, reason: `no public key with id ${proof.kid} was given` };
  try {
    const publicKey = await crypto.subtle.importKey("jwk", { kty: "OKP", crv: "Ed25519", x: key.x }, { name: "Ed25519" }, false, ["verify"]);
    const data = new TextEncoder().encode(canonicalize(body));
    const ok = await crypto.subtle.verify({ name: "Ed25519" }, publicKey, base64urlDecode(proof.value), data);
    return ok ? { ok: true, kid: proof.kid } : { ok: false, reason: "the proof does not match the receipt's fields (edited, or another key)" };
  } catch (error) {
    return { ok: false, reason: `the key or proof is malformed (${error.message})` };
  }
}
