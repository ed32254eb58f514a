/**
 * The log's side of C2SP tlog-witness: submit the published checkpoint with a
 * consistency proof from the size each witness last cosigned, keep the
 * cosignatures it answers with, and serve them on that checkpoint. A 409
 * tells the witness's real size: resync to it and retry once. Rounds run from
 * the ledger's alarm, at most one per WITNESS_INTERVAL_MS.
 */
import { parseNote } from "./note.ts";
import { formatAddCheckpoint, parseCosignerVkey, parseTreeSizeBody, validCosignatureLines } from "./cosignature.ts";
import { base64Decode, base64Encode } from "./encoding.ts";

export interface WitnessConfig {
  name: string;
  vkey: string;
  /** Submission prefix; add-checkpoint is POSTed to `<url>/add-checkpoint`. */
  url: string;
}

export const WITNESS_INTERVAL_MS = 10_000;

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

/** One round: every witness in parallel. Returns what happened per witness name. */
export async function cosignRound(log: WitnessedLog, witnesses: WitnessConfig[], fetcher: typeof fetch, now: number): Promise<Record<string, Outcome>> {
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

  const submit = async (w: WitnessConfig, retried = false): Promise<Outcome> => {
    const old = sizes[w.name] ?? 0;
    if (old === size && lines[w.name]?.length) return "unchanged";
    if (old > size) return `error: witness has size ${old}, larger than ours (${size}): possible fork, check it`;
    const proof = old === 0 ? [] : ((await log.consistency(old, size))?.proof ?? []).map(base64Decode);
    const res = await fetcher(`${w.url.replace(/\/+$/, "")}/add-checkpoint`, { method: "POST", body: formatAddCheckpoint(old, proof, cp.note) });
    const text = await res.text();
    if (res.status === 409 && !retried && (res.headers.get("Content-Type") ?? "").startsWith("text/x.tlog.size")) {
      const theirs = parseTreeSizeBody(text);
      if (theirs > size) return `error: witness has size ${theirs}, larger than ours (${size}): possible fork, check it`;
      sizes[w.name] = theirs;
      return submit(w, true);
    }
    if (res.status !== 200) return `error: HTTP ${res.status} ${text.slice(0, 200)}`;
    const valid = await validCosignatureLines(await parseCosignerVkey(w.vkey), body, text);
    if (valid.length === 0) return "error: no valid cosignature in the answer";
    lines[w.name] = valid;
    sizes[w.name] = size;
    return "cosigned";
  };

  const results = await Promise.all(
    witnesses.map(async (w) => [w.name, await submit(w).catch((err: Error): Outcome => `error: ${err.message}`)] as const),
  );
  kv.put(KEY.sizes, sizes);
  kv.put(KEY.cosigned, { size, root, lines } satisfies Cosigned);
  for (const [name, outcome] of results) if (outcome.startsWith("error")) console.warn(`witness ${name}: ${outcome}`);
  return Object.fromEntries(results);
}
