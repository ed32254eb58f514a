/**
 * One delivery attempt: the destination checked again (the operator's
 * allow-list, which may have been tightened since, and its addresses), then one
 * POST of a batch. Every attempt re-checks, retries included: a name that
 * passed at creation may resolve to 169.254.169.254 an hour later (DNS
 * rebinding), and the check is only as fresh as its last lookup.
 *
 * Why not pin the checked address: fetch() in Workers takes a URL and resolves
 * its host itself; it cannot be told to connect to a given IP while keeping the
 * name for Host and TLS SNI (a URL with the IP fails certificate validation,
 * cf.resolveOverride only redirects within one's own zone). So a name that answers our resolver
 * with a public address and the runtime's with a private one a moment later
 * still gets past; the check before every attempt narrows that to milliseconds
 * and catches every name that simply changed. What remains is bounded by the
 * platform: Cloudflare's egress for Workers does not route to private networks,
 * loopback or the link-local metadata range in the first place.
 */
import { buildRequest } from "./formats";
import { s3ErrorText } from "./object-storage";
import { checkStreamTarget, type TargetRules } from "./targets";
import { streamPolicy } from "./transport";
import type { BatchEvent, Destination } from "./batch";

/** gone: never retried; the stream is disabled until a replay (a 410, or a host the allow-list no longer names). */
export type SendOutcome = { kind: "ok" } | { kind: "gone" | "failed"; error: string };

const ERROR_EXCERPT = 200;

/** range: the seqs (from, to] the batch covers; a retry passes the same range. */
export async function sendBatch(dest: Destination, events: BatchEvent[], rules: TargetRules, range: { from: number; to: number }): Promise<SendOutcome> {
  // The lookup runs while the body is built (and gzipped): the check costs the attempt no extra wait when DNS is quick.
  const [check, { method, url, headers, body }] = await Promise.all([checkStreamTarget(dest.url, rules), buildRequest(dest, events, range)]);
  if (!check.ok) return { kind: check.notAllowed ? "gone" : "failed", error: `destination refused: ${check.reason}` };
  const timeout = streamPolicy.timeoutMs;
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const res = await Promise.race([
      streamPolicy.fetch(url, { method, headers, body, redirect: "manual", signal: controller.signal }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          controller.abort();
          reject(new Error(`no answer within ${timeout / 1000} s`));
        }, timeout);
      }),
    ]);
    if (res.status >= 200 && res.status < 300) {
      await res.body?.cancel().catch(() => {});
      return { kind: "ok" };
    }
    const text = await excerpt(res);
    const said = (dest.type === "s3" ? s3ErrorText(text) : text).slice(0, ERROR_EXCERPT);
    const error = `HTTP ${res.status}${said ? `: ${said}` : ""}`;
    return { kind: res.status === 410 ? "gone" : "failed", error };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { kind: "failed", error: `request failed: ${message.slice(0, ERROR_EXCERPT)}` };
  } finally {
    clearTimeout(timer);
  }
}

/** The first bytes of a destination's answer, printable characters only (the caller keeps ERROR_EXCERPT of them); the rest is never read. */
async function excerpt(res: Response): Promise<string> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < ERROR_EXCERPT * 4) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } catch {
    // An unreadable body is just left out.
  } finally {
    reader.cancel().catch(() => {});
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) all.set(c, (at += c.length) - c.length);
  return new TextDecoder().decode(all).replace(/[^\x20-\x7e]+/g, " ").trim();
}
