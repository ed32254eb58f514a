/**
 * List cursors: `<occurred_at>~<seq>`. occurred_at alone is not unique (clients
 * send many events in one millisecond), so seq breaks ties and the next page
 * resumes exactly after the last item. A bare ISO timestamp means "older than
 * this instant".
 */
export interface Cursor {
  occurredAt: string;
  seq: number | null;
}

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export function encodeCursor(occurredAt: string, seq: number): string {
  return `${occurredAt}~${seq}`;
}

/** Returns null for anything that is not a cursor we could have issued. */
export function decodeCursor(raw: string): Cursor | null {
  const [time, seqText, ...rest] = raw.split("~");
  if (rest.length > 0) return null;
  const occurredAt = normalizeTimestamp(time);
  if (occurredAt === null) return null;
  if (seqText === undefined) return { occurredAt, seq: null };
  if (!/^\d{1,15}$/.test(seqText) || !ISO_MS.test(time)) return null;
  return { occurredAt, seq: Number(seqText) };
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i;

/** ISO 8601 with a zone, normalized to UTC with milliseconds; null when invalid. */
export function normalizeTimestamp(text: string): string | null {
  if (!ISO_8601.test(text)) return null;
  // Date.parse only keeps milliseconds; trim extra fraction digits first.
  const trimmed = text.replace(/(\.\d{3})\d+/, "$1");
  const ms = Date.parse(trimmed);
  if (Number.isNaN(ms)) return null;
  // Date.parse rolls 2026-02-30 over into March; refuse it instead.
  const [, year, month, day] = /^(\d{4})-(\d{2})-(\d{2})/.exec(text)!.map(Number);
  if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return null;
  return new Date(ms).toISOString();
}
