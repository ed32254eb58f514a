import { hmacHex } from "../lib/crypto";
import { words } from "../model/search-query";
import type { ArchivedRow } from "./archive-segments";
import { positions, summaryKey } from "./summary-key";

/**
 * A summary of one archived segment (archive_summaries, migration 0019): a
 * Bloom filter over keyed hashes of what its rows hold, so reads, erasure and
 * hold checks read only the segments where a value may be. Keyed (HMAC under
 * a key derived from SIGNING_KEYS): the filter holds no clear personal data,
 * and without the secret nobody can test an e-mail address against it. A
 * summary describes the segment whose sha256 it names; any rewrite (erasure,
 * retention) makes it stale, and a stale or missing summary means "read it".
 * An erased value leaves the filter with the rewrite that scrubs it.
 */

/** Search words are summarised by their prefixes up to this many code points; a longer term is tested by its prefix. */
export const PREFIX_CHARS = 8;
/** ~0.06% false positives at 16 bits an element (k = 8), up to the cap: a false positive costs a segment read. */
const BITS_PER_ELEMENT = 16;
/** 8 KiB of filter: about 4 bytes of D1 per archived event at most (11 KB as base64 text). */
const MAX_BITS = 65_536;
const MIN_BITS = 256;
/**
 * The filter's first byte: a reader that does not know it reads the segment.
 * 2 adds each row's event id (lookups by id pick the one segment of those
 * sharing the id's millisecond: archive-lookup.ts); 1, written before, holds
 * everything else and still answers every other question.
 */
export const FORMAT = 2;
/** Formats a reader may ask about what 1 holds, and the one that holds ids. */
export const KNOWN_FORMATS: readonly number[] = [1, 2];
export const ID_FORMAT = 2;

/** What a filter can be asked about. */
export type ElementKind = "organization" | "actor_id" | "actor_email" | "ip_address" | "action" | "action_prefix" | "target_type" | "target" | "word" | "id";
const TAG: Record<ElementKind, string> = { organization: "o", actor_id: "a", actor_email: "e", ip_address: "i", action: "x", action_prefix: "p", target_type: "t", target: "T", word: "w", id: "I" };
/** Retention rules name action prefixes (`debug.*`): each action is summarised by its prefixes up to this many characters. */
export const ACTION_PREFIX_CHARS = 64;

export const element = (kind: ElementKind, value: string) => `${TAG[kind]}\u0000${value}`;
export const targetElement = (type: string, id: string) => element("target", `${type}\u0000${id}`);
/** A retention rule's prefix (its pattern without the `*`) as the filter holds it. */
export const actionPrefixElement = (prefix: string) => element("action_prefix", prefix.slice(0, ACTION_PREFIX_CHARS));
/** A search term (already folded by searchTerms) as the filter holds it. */
export const termElement = (term: string) => element("word", [...term].slice(0, PREFIX_CHARS).join(""));

type SummarisedRow = Pick<ArchivedRow, "organization" | "actor_id" | "actor_email" | "actor_name" | "ip_address" | "action" | "targets"> & { id?: string };

/** Every element a row puts in its segment's filter. */
export function rowElements(r: SummarisedRow, into = new Set<string>()): Set<string> {
  const add = (kind: ElementKind, v: string | null) => v !== null && v !== undefined && into.add(element(kind, v));
  add("id", r.id ?? null);
  add("organization", r.organization);
  add("actor_id", r.actor_id);
  add("actor_email", r.actor_email);
  add("ip_address", r.ip_address);
  add("action", r.action);
  for (let n = 1; n <= Math.min(r.action.length, ACTION_PREFIX_CHARS); n++) into.add(element("action_prefix", r.action.slice(0, n)));
  for (const t of JSON.parse(r.targets || "[]") as Array<{ type: string; id: string }>) {
    add("target_type", t.type);
    into.add(targetElement(t.type, t.id));
  }
  for (const text of [r.action, r.actor_name, r.actor_email, r.actor_id]) {
    for (const w of text ? words(text) : []) {
      const chars = [...w];
      for (let n = 2; n <= Math.min(chars.length, PREFIX_CHARS); n++) into.add(element("word", chars.slice(0, n).join("")));
    }
  }
  return into;
}

export interface SummaryRow {
  project_id: string;
  first_seq: number;
  sha256: string;
  key_version: number;
  /** base64: [format, k, ...bits]. Text, not a blob: D1 sends blobs as JSON arrays of numbers. */
  filter: string;
  mac: string;
}

/** What a summary's MAC covers: it names its segment copy, so it cannot be moved to another. */
export const macText = (s: Omit<SummaryRow, "mac">) => `witness.segment-summary.v1\n${s.project_id}\n${s.first_seq}\n${s.sha256}\n${s.key_version}\n${s.filter}`;

/** The summary of a segment's rows, for the segment (first_seq, sha256) as sealed. */
export async function summarise(env: Env, segment: { project_id: string; first_seq: number; sha256: string }, rows: SummarisedRow[]): Promise<SummaryRow> {
  const { version, key } = await summaryKey(env);
  const elements = new Set<string>();
  for (const r of rows) rowElements(r, elements);
  const n = Math.max(1, elements.size);
  const bits = Math.ceil(Math.min(MAX_BITS, Math.max(MIN_BITS, n * BITS_PER_ELEMENT)) / 8) * 8;
  const k = Math.min(8, Math.max(1, Math.round((bits / n) * Math.LN2)));
  const filter = new Uint8Array(2 + bits / 8);
  filter[0] = FORMAT;
  filter[1] = k;
  const hashed = await Promise.all([...elements].map((e) => positions(key, e)));
  for (const words of hashed) {
    for (let i = 0; i < k; i++) {
      const bit = words[i] % bits;
      filter[2 + (bit >>> 3)] |= 1 << (bit & 7);
    }
  }
  const row = { project_id: segment.project_id, first_seq: segment.first_seq, sha256: segment.sha256, key_version: version, filter: toBase64(filter) };
  return { ...row, mac: await hmacHex(key, macText(row)) };
}

/**
 * Writes a summary only while the index row names the copy it summarises (run
 * after the row's own insert or switch in the same batch): a refused erasure
 * switch or a segment rewritten meanwhile keeps the summary it has.
 */
export function summaryStatement(db: D1Database, s: SummaryRow): D1PreparedStatement {
  return db
    .prepare(
      "INSERT OR REPLACE INTO archive_summaries (project_id, first_seq, sha256, key_version, filter, mac) SELECT ?1, ?2, ?3, ?4, ?5, ?6 " +
        "WHERE EXISTS (SELECT 1 FROM archive_segments WHERE project_id = ?1 AND first_seq = ?2 AND sha256 = ?3)",
    )
    .bind(s.project_id, s.first_seq, s.sha256, s.key_version, s.filter, s.mac);
}

/** The summary columns a segment query (archive_segments s) joins in with summaryJoin, as a row. */
export const SUMMARY_JOIN_COLUMNS = "m.key_version AS m_version, m.filter AS m_filter, m.mac AS m_mac";

/** The segment's own summary, only for the copy it names; `gate`: an SQL condition (a bound flag) that skips the join. */
export function summaryJoin(gate = "1"): string {
  return `LEFT JOIN archive_summaries m ON ${gate} AND m.project_id = s.project_id AND m.first_seq = s.first_seq AND m.sha256 = s.sha256 `;
}
export type SummaryJoined = { m_version: number | null; m_filter: string | null; m_mac: string | null };

/** The joined columns of a segment (project_id, first_seq, sha256 its own) back to its summary, or null. */
export function joinedSummary(row: SummaryJoined & { project_id: string; first_seq: number; sha256: string }): SummaryRow | null {
  if (row.m_filter === null) return null;
  return { project_id: row.project_id, first_seq: row.first_seq, sha256: row.sha256, key_version: row.m_version!, filter: row.m_filter, mac: row.m_mac! };
}

/** A segment's summary goes with it (retention, a restore into D1). */
export function dropSummary(db: D1Database, projectId: string, firstSeq: number): D1PreparedStatement {
  return db.prepare("DELETE FROM archive_summaries WHERE project_id = ? AND first_seq = ?").bind(projectId, firstSeq);
}

function toBase64(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}
