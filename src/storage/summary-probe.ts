import { hmacHex } from "../lib/crypto";
import { KNOWN_FORMATS, macText, type SummaryRow } from "./archive-summary";
import { positions, summaryKey } from "./summary-key";

/**
 * A question to ask filters: every group must have at least one of its
 * elements inside (groups are ANDed, a group's elements ORed: the actions of
 * an `actions` filter). Hashes are worked out once per key version.
 */
export class SummaryProbe {
  private hashed = new Map<number, Promise<Uint32Array[][]>>();
  constructor(
    private env: Env,
    readonly groups: string[][],
    /** The filter formats that hold what is asked (ids only since format 2); a filter of another reads the segment. */
    private readonly formats: readonly number[] = KNOWN_FORMATS,
  ) {}

  get empty(): boolean {
    return this.groups.length === 0;
  }

  /**
   * False only when the segment's summary is authentic (summaryIsAuthentic)
   * and proves that no row of it can hold what is asked. A missing, stale or
   * forged summary admits the segment: it is read.
   */
  async admits(summary: SummaryRow | null): Promise<boolean> {
    if (!summary || !(await summaryIsAuthentic(this.env, summary))) return true;
    return this.mayContain(summary.key_version, summary.filter);
  }

  /** False only when the filter proves no row of the segment can hold what is asked. */
  async mayContain(version: number, filterText: string): Promise<boolean> {
    const filter = fromBase64(filterText);
    if (!this.formats.includes(filter[0]) || filter.length < 3) return true;
    const k = filter[1];
    const bits = (filter.length - 2) * 8;
    const has = (w: Uint32Array) => {
      for (let i = 0; i < k; i++) {
        const bit = w[i] % bits;
        if ((filter[2 + (bit >>> 3)] & (1 << (bit & 7))) === 0) return false;
      }
      return true;
    };
    const groups = await this.hashesFor(version);
    return groups.every((group) => group.some(has));
  }

  private hashesFor(version: number) {
    let found = this.hashed.get(version);
    if (!found) {
      found = summaryKey(this.env, version).then(({ key }) => Promise.all(this.groups.map((g) => Promise.all(g.map((e) => positions(key, e))))));
      this.hashed.set(version, found);
    }
    return found;
  }
}

/** Whether a stored summary was written by this deployment for exactly this segment (a database writer cannot forge one). */
export async function summaryIsAuthentic(env: Env, s: SummaryRow): Promise<boolean> {
  try {
    const { key } = await summaryKey(env, s.key_version);
    return (await hmacHex(key, macText(s))) === s.mac;
  } catch {
    return false;
  }
}

function fromBase64(text: string): Uint8Array {
  const raw = atob(text);
  const out = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}
