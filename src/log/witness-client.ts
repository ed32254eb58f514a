/**
 * The log's side of C2SP tlog-witness: submit the published checkpoint with a
 * consistency proof from the size each witness last cosigned, keep the
 * cosignatures it answers with, and serve them on that checkpoint. A 409
 * tells the witness's real size: resync to it and retry once. Rounds run from
 * the ledger's alarm, at most one per WITNESS_INTERVAL_MS. Each witness gets
 * a deadline and a cap on its answer, and each cosignature is stored as it
 * arrives: a witness that hangs or floods costs its own cosignature only.
 */
import { readCapped as readStreamCapped } from "../lib/capped-read";
import { parseNote } from "../tlog/note.ts";
import { formatAddCheckpoint, parseCosignerVkey, parseTreeSizeBody, validCosignatureLines } from "../tlog/cosignature.ts";
import { base64Decode, base64Encode } from "../tlog/encoding.ts";

export interface WitnessConfig {
  name: string;
  vkey: string;
  /** Submission prefix; add-checkpoint is POSTed to `<url>/add-checkpoint`. */
  url: string;
}

export const WITNESS_INTERVAL_MS = 10_000;
/** A witness's whole exchange (both requests when it answers 409): a live witness answers in well under a second. */
export const WITNESS_TIMEOUT_MS = 5_000;
/** An answer is a few signature lines of about a hundred bytes; anything far larger is not a witness talking. */
export const MAX_WITNESS_ANSWER = 16 * 1024;

export interface RoundLimits {
  timeoutMs?: number;
  maxBodyBytes?: number;
}

/** The part of ProjectLog a round needs (kept narrow so the round is testable on its own). */
export interface WitnessedLog {
  readonly publishedSize: number;
  readonly store: { kv: SyncKvStorage };
  checkpoint(size?: number): Promise<{ note: string; text: string; checkpoint: { rootHash: Uint8Array } } | null>;
  consistency(from: number, to?: number): Promise<{ proof: string[] } | null>;
}

interface Cosigned {
  size: number;
  root: string;
  /** Cosignature lines by witness name, for the checkpoint (size, root). */
  lines: Record<string, string[]>;
}

const KEY = { cosigned: "log:cosigned", sizes: "log:witness_sizes", last: "log:witness_last" } as const;

/** WITNESSES is a JSON list of {name, vkey, url}; empty or unset means none. Throws on a malformed value. */
export function parseWitnesses(raw: string | undefined): WitnessConfig[] {
  if (!raw || raw.trim() === "") return [];
  const list = JSON.parse(raw) as unknown;
  const valid = (w: any): w is WitnessConfig => w && typeof w.name === "string" && typeof w.vkey === "string" && typeof w.url === "string";
  if (!Array.isArray(list) || !list.every(valid)) throw new Error("WITNESSES must be a JSON list of {name, vkey, url}");
  return list;
}

/** Signature lines to append to the checkpoint of (size, root): what the witnesses gave for exactly it. */
export function cosignaturesFor(kv: SyncKvStorage, size: number, root: string): string {
  const c = kv.get<Cosigned>(KEY.cosigned);
  if (!c || c.size !== size || c.root !== root) return "";
  return Object.values(c.lines).flat().join("");
}

/** When the next round is due, or null when every witness already cosigned the published checkpoint. */
export function nextRoundAt(log: WitnessedLog, witnesses: WitnessConfig[], now: number): number | null {
  if (witnesses.length === 0 || log.publishedSize === 0) return null;
  const c = log.store.kv.get<Cosigned>(KEY.cosigned);
  if (c && c.size === log.publishedSize && witnesses.every((w) => c.lines[w.name]?.length)) return null;
  return Math.max(now, (log.store.kv.get<number>(KEY.last) ?? 0) + WITNESS_INTERVAL_MS);
}

type Outcome = "cosigned" | "unchanged" | `error: ${string}`;

/** The body as text, refusing (and cancelling) one longer than `max` bytes. */
async function readCapped(res: Response, max: number): Promise<string> {
  if (!res.body) return "";
  const read = await readStreamCapped(res.body, max);
  if ("over" in read) throw new Error(`answer larger than ${max} bytes`);
  return new TextDecoder().decode(read.bytes);
}

/** Runs `work` with a deadline that holds even if what it awaits ignores the abort signal. */
async function withDeadline<T>(ms: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new Error(`no answer within ${ms} ms`));
    }, ms);
  });
  try {
    return await Promise.race([work(controller.signal), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** One round: every witness in parallel, each cosignature stored as it comes. Returns what happened per witness name. */
export async function cosignRound(
  log: WitnessedLog,
  witnesses: WitnessConfig[],
  fetcher: typeof fetch,
  now: number,
  limits: RoundLimits = {},
): Promise<Record<string, Outcome>> {
  const { timeoutMs = WITNESS_TIMEOUT_MS, maxBodyBytes = MAX_WITNESS_ANSWER } = limits;
  const kv = log.store.kv;
  kv.put(KEY.last, now);
  const size = log.publishedSize;
  const cp = size > 0 ? await log.checkpoint(size) : null;
  if (!cp) return {};
  const root = base64Encode(cp.checkpoint.rootHash);
  const body = parseNote(cp.note).text;
  const sizes = kv.get<Record<string, number>>(KEY.sizes) ?? {};
  const prev = kv.get<Cosigned>(KEY.cosigned);
  const lines: Record<string, string[]> = prev && prev.size === size && prev.root === root ? { ...prev.lines } : {};
  const save = () => {
    kv.put(KEY.sizes, sizes);
    kv.put(KEY.cosigned, { size, root, lines } satisfies Cosigned);
  };

  const submit = async (w: WitnessConfig, signal: AbortSignal, retried = false): Promise<Outcome> => {
    const old = sizes[w.name] ?? 0;
    if (old === size && lines[w.name]?.length) return "unchanged";
    if (old > size) return `error: witness has size ${old}, larger than ours (${size}): possible fork, check it`;
    const proof = old === 0 ? [] : ((await log.consistency(old, size))?.proof ?? []).map(base64Decode);
    const res = await fetcher(`${w.url.replace(/\/+$/, "")}/add-checkpoint`, { method: "POST", body: formatAddCheckpoint(old, proof, cp.note), signal });
    const text = await readCapped(res, maxBodyBytes);
    // Past the deadline the round has moved on (and a later one may have stored newer state): change nothing.
    if (signal.aborted) return "error: answered after the deadline";
    if (res.status === 409 && !retried && (res.headers.get("Content-Type") ?? "").startsWith("text/x.tlog.size")) {
      const theirs = parseTreeSizeBody(text);
      if (theirs > size) return `error: witness has size ${theirs}, larger than ours (${size}): possible fork, check it`;
      sizes[w.name] = theirs;
      return submit(w, signal, true);
    }
    if (res.status !== 200) return `error: HTTP ${res.status} ${text.slice(0, 200)}`;
    const valid = await validCosignatureLines(await parseCosignerVkey(w.vkey), body, text);
    if (signal.aborted) return "error: answered after the deadline";
    if (valid.length === 0) return "error: no valid cosignature in the answer";
    lines[w.name] = valid;
    sizes[w.name] = size;
    save();
    return "cosigned";
  };

  const results = await Promise.all(
    witnesses.map(async (w) => [w.name, await withDeadline(timeoutMs, (signal) => submit(w, signal)).catch((err: Error): Outcome => `error: ${err.message}`)] as const),
  );
  save();
  for (const [name, outcome] of results) if (outcome.startsWith("error")) console.warn(`witness ${name}: ${outcome}`);
  return Object.fromEntries(results);
}
