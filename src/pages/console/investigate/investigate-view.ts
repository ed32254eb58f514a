import { CAPS } from "../../../schemas/event";
import { utf8Length } from "../../../lib/crypto";
import { relativeTime } from "../layout";

/**
 * What the investigation pages are about: one actor, one organization or one
 * target, and everything they share (links, filters, times, counts). Links
 * carry ids with encodeURIComponent, so any id (slashes, spaces, quotes,
 * markup, any script) comes back as it was.
 */
export type Subject = { kind: "actor"; id: string } | { kind: "organization"; id: string } | { kind: "target"; type: string; id: string };
export type Kind = Subject["kind"];

/** An event as GET /v1/events lists it, in the fields these pages show. */
export interface InvEvent {
  id: string;
  action: string;
  organization: string | null;
  actor: { type?: string | null; id?: string | null; name?: string | null; email?: string | null } | null;
  targets: { type: string; id: string; name?: string | null }[];
  occurred_at: string;
  anonymized_at?: string | null;
  display?: string | null;
}

/** One erasure of an actor, as GET /v1/actors/{id}/erasures answers it. */
export interface Erasure {
  erasure_id: number;
  by: "id" | "email";
  organization: string | null;
  erased_at: string;
  status: "applying" | "applied";
  anonymized: number | null;
}

const enc = encodeURIComponent;
const query = (params: [string, string | null | undefined][]) =>
  params
    .filter((p): p is [string, string] => typeof p[1] === "string" && p[1] !== "")
    .map(([k, v]) => `${k}=${enc(v)}`)
    .join("&");

export { actorHref, organizationHref, targetHref } from "../layout";

const idParams = (s: Subject): [string, string][] => (s.kind === "target" ? [["type", s.type], ["id", s.id]] : [["id", s.id]]);

/** The subject's page; `cursor` for a later page of its events. */
export const subjectHref = (s: Subject, cursor?: string | null) => `/console/${s.kind}?${query([...idParams(s), ["cursor", cursor]])}`;

/** The console's download of the subject's events (streams GET /v1/exports through). */
export const exportHref = (s: Subject, format: "csv" | "json") => `/console/${s.kind}/export?${query([...idParams(s), ["format", format]])}`;

/** The /v1 list and export filters that select the subject's events. */
export function filtersOf(s: Subject): Record<string, string> {
  if (s.kind === "actor") return { actor_id: s.id };
  if (s.kind === "organization") return { organization: s.id };
  return { target_type: s.type, target_id: s.id };
}

/**
 * Whether an event could name it at all: ingest refuses longer values (in
 * UTF-8 bytes), so a longer id has no events, and asking /v1 would only get
 * its 400 for an over-long filter.
 */
export function storable(s: Subject): boolean {
  if (s.kind === "actor") return utf8Length(s.id) <= CAPS["actor.id"];
  if (s.kind === "organization") return utf8Length(s.id) <= CAPS.organization;
  return utf8Length(s.type) <= CAPS["target.type"] && utf8Length(s.id) <= CAPS["target.id"];
}

export const NOUN: Record<Kind, string> = { actor: "actor", organization: "organization", target: "target" };

// One count and time format on every console page (../layout.tsx).
export { plural, utcText } from "../layout";

/** "3 min ago", "2 days ago", "in 5 days": the console's one relative form. */
export const relative = (iso: string, now: number): string => relativeTime(iso, now);

export interface Tally {
  key: string;
  /** A name the events gave it (the newest seen), when one differs from the key. */
  name: string | null;
  count: number;
  last: string;
}

/** Distinct values among the events, most frequent first (ties: most recent first); events without one are counted in `none`. */
export function tally(events: InvEvent[], keyOf: (e: InvEvent) => { key: string; name?: string | null } | null): { items: Tally[]; none: number } {
  const seen = new Map<string, Tally>();
  let none = 0;
  for (const e of events) {
    const k = keyOf(e);
    if (!k) {
      none++;
      continue;
    }
    const t = seen.get(k.key);
    if (t) {
      t.count++;
      if (e.occurred_at > t.last) t.last = e.occurred_at;
      t.name ??= k.name && k.name !== k.key ? k.name : null;
    } else {
      seen.set(k.key, { key: k.key, name: k.name && k.name !== k.key ? k.name : null, count: 1, last: e.occurred_at });
    }
  }
  const items = [...seen.values()].sort((a, b) => b.count - a.count || (a.last < b.last ? 1 : a.last > b.last ? -1 : 0));
  return { items, none };
}
