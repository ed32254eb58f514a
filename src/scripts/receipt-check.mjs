// Offline check of a Witness receipt's Ed25519 proof and of its transparency
// log proof. Plain JavaScript on WebCrypto plus src/tlog (dependency-free; the
// project's Node 22 runs its .ts files as they are), so it runs the same in
// Node (npm run receipt:verify) and in the tests; no database, no API key, no
// network. The typed client gets it bundled with src/tlog into plain JavaScript
// (npm run client:bundle), for runtimes that cannot load .ts files.
import { parseCheckpoint } from "../tlog/checkpoint.ts";
import { hexDecode } from "../tlog/encoding.ts";
import { formatVkey, parseNote } from "../tlog/note.ts";
import { parseTlogProof, verifyTlogProof } from "../tlog/tlog-proof.ts";

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

/**
 * JSON.parse that refuses a name repeated in one object, at any depth, compared
 * after unescaping ("v\u0061lid" is "valid"). JSON.parse keeps the last of
 * duplicates and other parsers the first, so the proof could cover one reading
 * of a receipt while a person or another tool sees the other. Only text shows
 * them: an object already parsed has lost them.
 */
export function parseJsonStrict(text) {
  // Throws on whatever is not JSON, so the scan below only ever meets valid JSON.
  const value = JSON.parse(text);
  const scopes = []; // per open container: a Set of names for an object, null for an array
  let atName = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      if (atName) {
        const name = JSON.parse(text.slice(i, end + 1));
        const names = scopes[scopes.length - 1];
        if (names.has(name)) throw new SyntaxError(`duplicate key ${JSON.stringify(name)}`);
        names.add(name);
        atName = false;
      }
      i = end;
    } else if (c === "{") {
      scopes.push(new Set());
      atName = true;
    } else if (c === "[") {
      scopes.push(null);
      atName = false;
    } else if (c === "}" || c === "]") {
      scopes.pop();
      atName = false;
    } else if (c === ",") {
      atName = scopes[scopes.length - 1] !== null;
    } else if (c === ":") {
      atName = false;
    }
  }
  return value;
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
    const doc = parseJsonStrict(trimmed);
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

/** The receipt in JSON text (either shape above); throws on anything but strict JSON (parseJsonStrict). */
export function readReceipt(text) {
  return unwrapReceipt(parseJsonStrict(text));
}

/**
 * The receipt's tlog_proof (c2sp.org/tlog-proof@v1): the event's hash is leaf
 * seq - 1 of a checkpoint signed by one of the keys under the log's origin
 * (its vkey is `<origin>+<key ID>+<base64(0x01 || key)>`, formed here).
 */
export async function verifyTlogEntry(receipt, keys) {
  let origin;
  try {
    origin = parseCheckpoint(parseNote(parseTlogProof(receipt.tlog_proof).checkpoint).text).origin;
  } catch (error) {
    return { ok: false, reason: `tlog_proof is malformed (${error.message})` };
  }
  if (typeof receipt.hash !== "string" || !/^[0-9a-f]{64}$/.test(receipt.hash)) return { ok: false, reason: "the receipt's hash is malformed" };
  let last = "no key given";
  for (const key of keys) {
    let vkey;
    try {
      vkey = await formatVkey(origin, base64urlDecode(key.x));
    } catch {
      continue;
    }
    const result = await verifyTlogProof(receipt.tlog_proof, { leafData: hexDecode(receipt.hash) }, vkey);
    if (!result.ok) {
      last = result.reason;
      continue;
    }
    if (result.index !== receipt.seq - 1) return { ok: false, reason: `tlog_proof is for leaf ${result.index}, the event is leaf ${receipt.seq - 1}` };
    return { ok: true, origin, index: result.index, tree_size: result.checkpoint.size, kid: key.kid };
  }
  return { ok: false, reason: `tlog_proof does not verify against the published keys (${last})` };
}

/**
 * { ok: true, kid } when the proof matches the receipt's fields under one of
 * the keys, plus `tlog` when the receipt carries a transparency log proof,
 * which must then verify too (receipts issued while a project's log was being
 * built have tlog_proof null), and the receipt says the event was intact
 * (`valid: true`). Pass the JSON text as received (bare or in its `{ data }`
 * envelope): only text can show duplicate keys, which fail it.
 */
export async function verifyReceipt(receipt, keys) {
  if (typeof receipt === "string") {
    try {
      receipt = readReceipt(receipt);
    } catch (error) {
      return { ok: false, reason: `the receipt is not strict JSON (${error.message})` };
    }
  }
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
    if (!ok) return { ok: false, reason: "the proof does not match the receipt's fields (edited, or another key)" };
  } catch (error) {
    return { ok: false, reason: `the key or proof is malformed (${error.message})` };
  }
  let tlog;
  if (body.tlog_proof !== undefined && body.tlog_proof !== null) {
    if (typeof body.tlog_proof !== "string") return { ok: false, reason: "tlog_proof is not text" };
    tlog = await verifyTlogEntry(body, keys);
    if (!tlog.ok) return tlog;
  }
  // A genuine receipt can still say no: `valid` is Witness's own check of the event and its links at issuance.
  if (body.valid !== true) {
    return { ok: false, reason: `the receipt is genuine (key ${proof.kid}) but says that when issuing it, Witness found this event or its chain links altered (valid: ${JSON.stringify(body.valid)})` };
  }
  return tlog ? { ok: true, kid: proof.kid, tlog } : { ok: true, kid: proof.kid };
}
