/**
 * Who a project's log is: its log id (control database), its origin
 * `<LOG_ORIGIN_HOST>/logs/<log_id>`, and the key that signs its checkpoints,
 * the newest Ed25519 key of RECEIPT_SIGNING_KEYS under the origin as key
 * name. One key serves every project; each project's vkey still differs
 * because the key ID covers the name.
 */
import { base64urlDecode } from "../sealing/receipt-signing";
import { randomHex } from "../lib/crypto";
import { base64Encode, concatBytes } from "../tlog/encoding.ts";
import { type NoteSigner, SIG_TYPE_ED25519, formatVkey, noteSignerFromPkcs8 } from "../tlog/note.ts";

export function logOrigin(env: Pick<Env, "LOG_ORIGIN_HOST">, logId: string): string {
  const host = (env.LOG_ORIGIN_HOST ?? "").trim();
  if (!host) throw new Error("LOG_ORIGIN_HOST is not set (wrangler.toml [vars])");
  return `${host}/logs/${logId}`;
}

/** `{base}/logs/<log_id>`: where the checkpoint and tiles are served. */
export function publicLogUrl(base: string, logId: string): string {
  return `${base}/logs/${logId}`;
}

/**
 * The project's log id, set at creation (or by migration 0006). A project
 * row without one (made by an older tool mid-rollout) gets one here, once:
 * the conditional update keeps two racing ledgers from choosing different ids.
 */
export async function loadLogId(env: Pick<Env, "DB">, projectId: string): Promise<string> {
  const read = () => env.DB.prepare("SELECT log_id FROM projects WHERE id = ?").bind(projectId).first<{ log_id: string | null }>();
  let row = await read();
  if (!row) throw new Error(`Unknown project ${projectId}`);
  if (row.log_id === null) {
    await env.DB.prepare("UPDATE projects SET log_id = ? WHERE id = ? AND log_id IS NULL").bind(randomHex(16), projectId).run();
    row = await read();
  }
  return row!.log_id!;
}

const signers = new Map<string, Promise<NoteSigner | null>>();

/** The newest RECEIPT_SIGNING_KEYS entry as a note signer named `origin`; null without keys. */
export function logSigner(env: Pick<Env, "RECEIPT_SIGNING_KEYS">, origin: string): Promise<NoteSigner | null> {
  const raw = env.RECEIPT_SIGNING_KEYS ?? "";
  const cacheKey = `${origin}\n${raw}`;
  let signer = signers.get(cacheKey);
  if (!signer) {
    const entries = raw.split(",").map((e) => e.trim()).filter(Boolean);
    const newest = entries[entries.length - 1];
    signer = newest ? noteSignerFromPkcs8(origin, base64urlDecode(newest.slice(newest.indexOf(":") + 1))) : Promise.resolve(null);
    signer.catch(() => signers.delete(cacheKey));
    if (signers.size > 1000) signers.clear();
    signers.set(cacheKey, signer);
  }
  return signer;
}

/** The vkey a customer pins for this log: `<origin>+<key ID>+<base64(0x01 || public key)>`. */
export async function logVkey(signer: NoteSigner): Promise<string> {
  return formatVkey(signer.name, signer.publicKey);
}

/**
 * What /.well-known/witness-keys.json says about log keys. A vkey's key ID
 * covers the log's origin, so no single vkey fits every project: publish the
 * signing key in vkey form and how to complete it; GET /v1/log gives each
 * project its full vkey, which must end in `+<key>`.
 */
export function logKeyInfo(env: Pick<Env, "LOG_ORIGIN_HOST">, signer: { kid: string; x: string } | null) {
  if (!signer) return null;
  const raw = Uint8Array.from(atob(signer.x.replaceAll("-", "+").replaceAll("_", "/")), (ch) => ch.charCodeAt(0));
  return {
    signing_kid: signer.kid,
    origin: `${(env.LOG_ORIGIN_HOST ?? "").trim()}/logs/<log_id>`,
    key: base64Encode(concatBytes(new Uint8Array([SIG_TYPE_ED25519]), raw)),
    vkey: "<origin>+<key_id>+<key>",
    key_id: "hex of the first 4 bytes of SHA-256(<origin> || 0x0A || 0x01 || the 32-byte public key)",
  };
}
