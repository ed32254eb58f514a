/**
 * STREAM_DESTINATIONS: the operator's allow-list of hosts a log stream may
 * deliver to, so that an admin key (or whoever stole one) cannot stream a
 * project's history to a host of their choosing. Comma-separated patterns:
 *
 *   splunk.example.com       that host, any port
 *   *.example.com            any subdomain of example.com, at any depth, but not
 *                            example.com itself (list it too to allow it)
 *   splunk.example.com:8088  that host on that port only
 *
 * No scheme, path or credentials. Empty: any public host (the other checks of
 * targets.ts still apply). An entry that is not a pattern allows nothing; a
 * list of only such entries allows nothing either (fails closed).
 */
export interface HostPattern {
  /** Lower case, punycode, no trailing dot; IPv6 in brackets. */
  host: string;
  /** "*.host": subdomains of host. */
  subdomains: boolean;
  /** null: any port. */
  port: number | null;
}

export interface Destinations {
  /** No list: every public host. */
  any: boolean;
  patterns: HostPattern[];
  /** Entries that are not patterns (they match nothing). */
  invalid: string[];
}

export function parseDestinations(raw: string | undefined): Destinations {
  const entries = (raw ?? "").split(",").map((e) => e.trim()).filter((e) => e !== "");
  const patterns: HostPattern[] = [];
  const invalid: string[] = [];
  for (const entry of entries) {
    const pattern = parsePattern(entry);
    if (pattern) patterns.push(pattern);
    else invalid.push(entry);
  }
  return { any: entries.length === 0, patterns, invalid };
}

export function parsePattern(entry: string): HostPattern | null {
  const subdomains = entry.startsWith("*.");
  const rest = subdomains ? entry.slice(2) : entry;
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]/?#@\\%*\s]+)(?::(\d{1,5}))?$/.exec(rest);
  if (!m) return null;
  const port = m[2] === undefined ? null : Number(m[2]);
  if (port !== null && (port < 1 || port > 65535)) return null;
  let url: URL;
  try {
    // The URL parser normalizes the host exactly as it does a stream's url: case, IDN to punycode, IPv4 forms.
    url = new URL(`https://${m[1]}/`);
  } catch {
    return null;
  }
  const host = normalHost(url.hostname);
  if (!host || host.startsWith(".")) return null;
  // Subdomains of an address mean nothing.
  if (subdomains && (host.startsWith("[") || /^\d+\.\d+\.\d+\.\d+$/.test(host))) return null;
  return { host, subdomains, port };
}

/** Whether the list allows a stream to `url` (already parsed; its scheme checked elsewhere). */
export function destinationAllowed(list: Destinations, url: URL): boolean {
  if (list.any) return true;
  const host = normalHost(url.hostname);
  const port = url.port ? Number(url.port) : url.protocol === "http:" ? 80 : 443;
  return list.patterns.some(
    (p) => (p.port === null || p.port === port) && (p.subdomains ? host.endsWith(`.${p.host}`) : host === p.host),
  );
}

function normalHost(hostname: string): string {
  return hostname.toLowerCase().replace(/\.$/, "");
}

let parsed: { raw: string; list: Destinations } | null = null;

/**
 * The deployment's list, read from env at every use: a list tightened by a
 * deploy applies to existing streams at their next delivery attempt.
 */
export function streamDestinations(env: Env): Destinations {
  const raw = env.STREAM_DESTINATIONS ?? "";
  if (parsed?.raw !== raw) {
    parsed = { raw, list: parseDestinations(raw) };
    if (parsed.list.invalid.length > 0) {
      console.warn(`STREAM_DESTINATIONS: not host patterns, so they allow nothing: ${parsed.list.invalid.map((e) => JSON.stringify(e)).join(", ")}`);
    }
  }
  return parsed.list;
}

/** Why a url is refused, for the stream's admin (the list itself is the operator's and is not shown). */
export function notAllowedReason(url: URL): string {
  return `url's host ${url.host} is not among the stream destinations this deployment allows (STREAM_DESTINATIONS)`;
}
