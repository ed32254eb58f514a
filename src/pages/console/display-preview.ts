import { checkTemplate, compileTemplate, type DisplayFields } from "../../catalog/display-template";
import type { Issue } from "../../lib/validate";

/** The fields a template reads, taken from an event as the API answers it (the same values the read path hands the template). */
export function displayFieldsOf(e: Record<string, any>): DisplayFields {
  const actor = (e.actor ?? null) as Record<string, string | null> | null;
  return {
    id: String(e.id),
    action: String(e.action),
    organization: e.organization ?? null,
    occurred_at: String(e.occurred_at),
    actor_id: actor?.id ?? null,
    actor_type: actor?.type ?? null,
    actor_name: actor?.name ?? null,
    actor_email: actor?.email ?? null,
    targets: JSON.stringify(e.targets ?? []),
    metadata: JSON.stringify(e.metadata ?? null),
    changes: e.changes == null ? null : JSON.stringify(e.changes),
  };
}

/** What is wrong with a template, before any event is fetched for it. */
export const templateIssues = (template: string): Issue[] => checkTemplate(template);

/**
 * The sentence a template (saved or only typed) renders for one event,
 * rendered on the server rather than in the browser: the console's scripts
 * cannot run the catalog's TypeScript, and the read path's own compiler means
 * the preview cannot disagree with what the API will answer. Call it with a
 * template templateIssues passed.
 */
export function previewSentence(template: string, event: Record<string, any>): string {
  return compileTemplate(template)(displayFieldsOf(event));
}
