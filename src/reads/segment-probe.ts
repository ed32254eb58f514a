import { element, targetElement, termElement } from "../storage/archive-summary";
import { SummaryProbe } from "../storage/summary-probe";
import type { Selection } from "../model/event-query";

/**
 * What a history read asks each archived segment's summary before reading it
 * (src/storage/archive-summary.ts): every equality filter of the selection, any
 * one of its actions, and every search term by its prefix. Null when nothing
 * can be asked (no filter, or only excluded actions): every segment in the
 * window is read, as before summaries.
 */
export function segmentProbe(env: Env, sel: Selection, terms: string[] = []): SummaryProbe | null {
  const groups: string[][] = [];
  if (sel.organization !== null) groups.push([element("organization", sel.organization)]);
  if (sel.actorId !== null) groups.push([element("actor_id", sel.actorId)]);
  if (sel.ipAddress !== null) groups.push([element("ip_address", sel.ipAddress)]);
  if (sel.actions !== null) groups.push(sel.actions.map((a) => element("action", a)));
  if (sel.targetType != null) groups.push([sel.targetId != null ? targetElement(sel.targetType, sel.targetId) : element("target_type", sel.targetType)]);
  for (const term of terms) groups.push([termElement(term)]);
  return groups.length === 0 ? null : new SummaryProbe(env, groups);
}
