/**
 * Where a stream may deliver: https:// only, and never to loopback, private,
 * link-local, unique-local, CGNAT or otherwise non-public addresses, nor to
 * names that are local by definition or that resolve (DNS-over-HTTPS) to such
 * addresses. ALLOW_PRIVATE_STREAM_TARGETS = "true" (npm run dev) lifts all of it.
 * The operator's allow-list (STREAM_DESTINATIONS, destinations.ts) applies either way.
 */
import { destinationAllowed, notAllowedReason, streamDestinations, type Destinations } from "./destinations";
import { streamPolicy, type StreamPolicy } from "./transport";

/** notAllowed: refused by the operator's allow-list, a decision no retry changes. */
export type TargetCheck = { ok: true; url: URL } | { ok: false; reason: string; notAllowed?: true };

export function privateTargetsAllowed(env: Env): boolean {
  return (env as { ALLOW_PRIVATE_STREAM_TARGETS?: string }).ALLOW_PRIVATE_STREAM_TARGETS === "true";
}

/** The deployment's rules for destinations, read from env each time (a changed list applies at once). */
export interface TargetRules {
  allowPrivate: boolean;
  destinations: Destinations;
}

export function targetRules(env: Env): TargetRules {
  return { allowPrivate: privateTargetsAllowed(env), destinations: streamDestinations(env) };
}

/**
 * Everything a stream's url must pass, at creation and before every delivery
 * attempt: syntax, the operator's allow-list (STREAM_DESTINATIONS, before any
 * lookup), then its addresses.
 */
export async function checkStreamTarget(raw: string, rules: TargetRules, policy: StreamPolicy = streamPolicy): Promise<TargetCheck> {
  const syntax = checkTargetSyntax(raw, rules.allowPrivate);
  if (!syntax.ok) return syntax;
  if (!destinationAllowed(rules.destinations, syntax.url)) return { ok: false, reason: notAllowedReason(syntax.url), notAllowed: true };
  return checkTarget(raw, rules.allowPrivate, policy);
}

const LOCAL_SUFFIXES = [".localhost", ".local", ".localdomain", ".internal", ".intranet", ".lan", ".home.arpa", ".corp", ".private", ".test", ".invalid"];
const LOCAL_NAMES = new Set(["localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", "metadata", "metadata.google.internal", "instance-data"]);

/** The checks that need no network: scheme, credentials in the URL, literal addresses, local names. */
export function checkTargetSyntax(raw: string, allowPrivate: boolean): TargetCheck {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: "url is not a valid absolute URL" };
  }
  if (url.username || url.password) return { ok: false, reason: "url must not carry a user name or password; use token" };
  if (allowPrivate) {
    if (url.protocol !== "https:" && url.protocol !== "http:") return { ok: false, reason: "url must be https://" };
    return { ok: true, url };
  }
  if (url.protocol !== "https:") return { ok: false, reason: "url must be https://" };
  // The URL parser already turned 0x7f.1, 2130706433 and the like into dotted quads.
  const host = url.hostname.toLowerCase().replace(/\.$/, "");
  if (host.startsWith("[")) {
    const v6 = parseIPv6(host.slice(1, -1));
    if (!v6 || !isPublicIPv6(v6)) return { ok: false, reason: "url points to a private, loopback or link-local address" };
    return { ok: true, url };
  }
  const v4 = parseIPv4(host);
  if (v4) return isPublicIPv4(v4) ? { ok: true, url } : { ok: false, reason: "url points to a private, loopback or link-local address" };
  if (LOCAL_NAMES.has(host) || LOCAL_SUFFIXES.some((s) => host.endsWith(s)) || !host.includes(".")) {
    return { ok: false, reason: "url names a local host; use a public DNS name" };
  }
  return { ok: true, url };
}

/**
 * Full check: syntax, then the name's A and AAAA records by DNS-over-HTTPS.
 * Fails closed: a name that cannot be resolved is refused.
 */
export async function checkTarget(raw: string, allowPrivate: boolean, policy: StreamPolicy = streamPolicy): Promise<TargetCheck> {
  const syntax = checkTargetSyntax(raw, allowPrivate);
  if (!syntax.ok || allowPrivate) return syntax;
  const host = syntax.url.hostname.replace(/\.$/, "");
  if (host.startsWith("[") || parseIPv4(host)) return syntax;
  let addresses: string[];
  try {
    addresses = await resolve(host, policy);
  } catch {
    return { ok: false, reason: "url's host name could not be resolved" };
  }
  if (addresses.length === 0) return { ok: false, reason: "url's host name has no address" };
  for (const a of addresses) {
    const v4 = parseIPv4(a);
    const v6 = v4 ? null : parseIPv6(a);
    if (v4 ? !isPublicIPv4(v4) : !v6 || !isPublicIPv6(v6)) return { ok: false, reason: "url's host name resolves to a private, loopback or link-local address" };
  }
  return syntax;
}

async function resolve(host: string, policy: StreamPolicy): Promise<string[]> {
  const answers = await Promise.all(
    ["A", "AAAA"].map(async (type) => {
      const res = await policy.fetch(`${policy.dohUrl}?name=${encodeURIComponent(host)}&type=${type}`, {
        headers: { Accept: "application/dns-json" },
        signal: AbortSignal.timeout(5000),
      });
      if (!res.ok) throw new Error(`DNS-over-HTTPS answered ${res.status}`);
      const body = (await res.json()) as { Status?: number; Answer?: { type: number; data: string }[] };
      if (body.Status !== 0 && body.Status !== 3) throw new Error(`DNS status ${body.Status}`);
      // type 1: A, 28: AAAA (CNAMEs are followed by the resolver and listed too).
      return (body.Answer ?? []).filter((r) => r.type === 1 || r.type === 28).map((r) => r.data);
    }),
  );
  return answers.flat();
}

export function parseIPv4(host: string): number[] | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (!m) return null;
  const parts = m.slice(1).map(Number);
  return parts.every((p) => p <= 255) ? parts : null;
}

export function isPublicIPv4([a, b, c]: number[]): boolean {
  if (a === 0 || a === 10 || a === 127 || a >= 224) return false; // this network, private, loopback, multicast, reserved, broadcast
  if (a === 100 && b >= 64 && b <= 127) return false; // CGNAT
  if (a === 169 && b === 254) return false; // link-local, cloud metadata
  if (a === 172 && b >= 16 && b <= 31) return false;
  if (a === 192 && b === 168) return false;
  if (a === 192 && b === 0 && (c === 0 || c === 2)) return false; // IETF assignments, TEST-NET-1
  if (a === 198 && (b === 18 || b === 19)) return false; // benchmarking
  if (a === 198 && b === 51 && c === 100) return false; // TEST-NET-2
  if (a === 203 && b === 0 && c === 113) return false; // TEST-NET-3
  return true;
}

/** Eight 16-bit groups, or null. */
export function parseIPv6(text: string): number[] | null {
  let s = text.toLowerCase();
  const zone = s.indexOf("%");
  if (zone >= 0) s = s.slice(0, zone);
  let tail: number[] = [];
  const lastColon = s.lastIndexOf(":");
  const v4 = parseIPv4(s.slice(lastColon + 1));
  if (v4) {
    tail = [(v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]];
    s = s.slice(0, lastColon + 1) + "0";
  }
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const groups = (part: string) => (part === "" ? [] : part.split(":"));
  const head = groups(halves[0]);
  const rest = halves.length === 2 ? groups(halves[1]) : [];
  if (v4) (halves.length === 2 ? rest : head).pop();
  const want = 8 - tail.length;
  const fill = halves.length === 2 ? want - head.length - rest.length : 0;
  if (fill < 0 || (halves.length === 1 && head.length !== want)) return null;
  const all = [...head, ...Array(fill).fill("0"), ...rest];
  if (all.some((g) => !/^[0-9a-f]{1,4}$/.test(g))) return null;
  return [...all.map((g) => parseInt(g, 16)), ...tail];
}

export function isPublicIPv6(g: number[]): boolean {
  const v4At = (i: number) => [g[i] >> 8, g[i] & 255, g[i + 1] >> 8, g[i + 1] & 255];
  if (g.slice(0, 7).every((x) => x === 0) && g[7] <= 1) return false; // :: and ::1
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return isPublicIPv4(v4At(6)); // IPv4-mapped
  if (g.slice(0, 6).every((x) => x === 0)) return false; // IPv4-compatible (deprecated)
  if (g[0] === 0x64 && g[1] === 0xff9b) return isPublicIPv4(v4At(6)); // NAT64
  if (g[0] === 0x2002) return isPublicIPv4(v4At(1)); // 6to4
  if ((g[0] & 0xfe00) === 0xfc00) return false; // unique local fc00::/7
  if ((g[0] & 0xffc0) === 0xfe80 || (g[0] & 0xffc0) === 0xfec0) return false; // link-local, site-local
  if ((g[0] & 0xff00) === 0xff00) return false; // multicast
  if (g[0] === 0x2001 && g[1] === 0x0db8) return false; // documentation
  if (g[0] === 0x100 && g[1] === 0 && g[2] === 0 && g[3] === 0) return false; // discard
  return true;
}
