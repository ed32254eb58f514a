/**
 * How stream deliveries reach the network, and their timing. Production uses
 * the global fetch and these defaults; tests (which share the isolate with the
 * delivery objects) swap in a receiver and shorter delays.
 */
export interface StreamPolicy {
  /** Fetches destinations and the DNS-over-HTTPS resolver. */
  fetch: typeof fetch;
  /** A destination that has not answered after this long has failed the try. */
  timeoutMs: number;
  /** First retry delay; doubles with every failure, with jitter, up to maxBackoffMs. */
  baseBackoffMs: number;
  maxBackoffMs: number;
  /** While caught up, a stream still looks for missed events this often (wake-ups are best effort). */
  idlePollMs: number;
  /** One alarm run delivers for at most this long, then schedules the next run at once. */
  runBudgetMs: number;
  /** The ledger wakes a project's streams at most this often; commits meanwhile join the next wake (wake.ts). */
  wakeCoalesceMs: number;
  /** A delivering stream reads its row (url, credential, filter) again after this long. Addresses are checked at every attempt. */
  reloadConfigMs: number;
  /** DNS-over-HTTPS endpoint (JSON API) that names are checked against. */
  dohUrl: string;
}

export const DEFAULT_POLICY: StreamPolicy = {
  fetch: (input, init) => fetch(input, init),
  timeoutMs: 15_000,
  baseBackoffMs: 2_000,
  maxBackoffMs: 24 * 3600 * 1000,
  idlePollMs: 5 * 60 * 1000,
  runBudgetMs: 25_000,
  wakeCoalesceMs: 25,
  reloadConfigMs: 5 * 60 * 1000,
  dohUrl: "https://cloudflare-dns.com/dns-query",
};

export const streamPolicy: StreamPolicy = { ...DEFAULT_POLICY };

/** Tests only: overrides parts of the policy; returns a function that restores the defaults. */
export function setStreamPolicy(overrides: Partial<StreamPolicy>): () => void {
  Object.assign(streamPolicy, overrides);
  return () => Object.assign(streamPolicy, DEFAULT_POLICY);
}

/** Exponential backoff with jitter: failure n waits between half and all of base * 2^(n-1), capped. */
export function backoffMs(failures: number, policy: StreamPolicy = streamPolicy): number {
  const ceiling = Math.min(policy.maxBackoffMs, policy.baseBackoffMs * 2 ** Math.min(Math.max(failures - 1, 0), 40));
  return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
}
