/**
 * Times as a person reads them. Pages are rendered on the server, in UTC and
 * said so, next to the exact ISO time the API and the receipt carry, so what a
 * reader quotes to an auditor can be matched to the record character for
 * character.
 */
const READABLE = new Intl.DateTimeFormat("en-GB", { dateStyle: "long", timeStyle: "long", timeZone: "UTC" });
const RELATIVE = new Intl.RelativeTimeFormat("en", { numeric: "auto" });
const UNITS: Array<[Intl.RelativeTimeFormatUnit, number]> = [
  ["year", 31_536_000], ["month", 2_592_000], ["week", 604_800], ["day", 86_400], ["hour", 3_600], ["minute", 60],
];

/** "14 March 2026 at 09:12:03 UTC"; the input itself when it is not a time. */
export function readableTime(iso: string): string {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? iso : READABLE.format(t);
}

/** "5 minutes ago", "in 2 days", "now", measured from `now` (ms). */
export function relativeTime(iso: string, now: number): string | null {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return null;
  const seconds = (t - now) / 1000;
  for (const [unit, size] of UNITS) if (Math.abs(seconds) >= size) return RELATIVE.format(Math.round(seconds / size), unit);
  return RELATIVE.format(0, "second");
}
