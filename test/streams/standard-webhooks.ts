/**
 * An independent Standard Webhooks verifier, written from the published spec
 * (github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md,
 * "Verifying webhook authenticity"): the signed content is
 * `${webhook-id}.${webhook-timestamp}.${body}`, the key is the base64 part of
 * the secret after "whsec_", the signature HMAC-SHA256 in base64, listed as
 * space-separated "v1,<sig>" entries; the timestamp must be within a tolerance
 * (5 minutes) of now. Shares no code with src/streams.
 */
const TOLERANCE_S = 5 * 60;

function fromB64(s: string): Uint8Array<ArrayBuffer> {
  const bin = atob(s);
  return Uint8Array.from(bin, (ch) => ch.charCodeAt(0));
}

export async function verifyStandardWebhook(secret: string, headers: Headers, body: string, nowS = Math.floor(Date.now() / 1000)): Promise<boolean> {
  const id = headers.get("webhook-id");
  const timestamp = headers.get("webhook-timestamp");
  const signatures = headers.get("webhook-signature");
  if (!id || !timestamp || !signatures) return false;
  if (!/^\d+$/.test(timestamp) || Math.abs(nowS - Number(timestamp)) > TOLERANCE_S) return false;
  if (!secret.startsWith("whsec_")) return false;
  const key = await crypto.subtle.importKey("raw", fromB64(secret.slice("whsec_".length)), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
  const content = new TextEncoder().encode(`${id}.${timestamp}.${body}`);
  for (const entry of signatures.split(" ")) {
    const [version, sig] = entry.split(",");
    if (version !== "v1" || !sig) continue;
    // subtle.verify compares in constant time.
    if (await crypto.subtle.verify("HMAC", key, fromB64(sig), content)) return true;
  }
  return false;
}
