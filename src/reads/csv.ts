import type { EventRow } from "../db/schema";

/** The export's columns: the event shape, with the actor spread over four columns; targets and metadata as their JSON text. */
export const CSV_COLUMNS = [
  "id", "project_id", "seq", "occurred_at", "action", "organization",
  "actor_id", "actor_type", "actor_name", "actor_email", "targets", "metadata",
  "ip_address", "user_agent", "hash", "prev_hash", "signature", "pii_commitment", "anonymized_at",
] as const satisfies ReadonlyArray<keyof EventRow>;

/** A spreadsheet runs a cell starting with one of these as a formula. */
const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

/**
 * One RFC 4180 field. Text a spreadsheet would run as a formula gets a
 * leading single quote first (OWASP "CSV injection"); then fields holding
 * quotes, commas or line breaks are quoted, inner quotes doubled.
 */
export type CsvValue = string | number | null;

export function csvField(value: CsvValue): string {
  if (value === null) return "";
  let text = String(value);
  if (FORMULA_START.test(text)) text = `'${text}`;
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function csvLine(fields: ReadonlyArray<CsvValue>): string {
  return `${fields.map(csvField).join(",")}\r\n`;
}

export const CSV_HEADER = csvLine(CSV_COLUMNS);
