import type { EventRow } from "../db/schema";

/**
 * The export's columns: the event shape, with the actor spread over four
 * columns; targets, metadata and changes as their JSON text. The catalog's
 * columns (issue 35) come last, so a reader of the earlier columns by position
 * reads them as before.
 */
export const CSV_COLUMNS = [
  "id", "project_id", "seq", "occurred_at", "action", "organization",
  "actor_id", "actor_type", "actor_name", "actor_email", "targets", "metadata",
  "ip_address", "user_agent", "hash", "prev_hash", "signature", "pii_commitment", "anonymized_at",
  "changes", "schema_version", "schema_valid",
] as const satisfies ReadonlyArray<keyof EventRow>;

/**
 * A spreadsheet runs a cell starting with `= + - @ \t \r` as a formula. A
 * cell starts at the field's start, and also right after a `,` or `;` or a
 * line break inside it for a reader that splits there: a spreadsheet in a
 * locale that separates with `;`, or one that ignores the quotes. Each such
 * start gets a single quote.
 */
const FORMULA_STARTS = /(?<=^|[,;\r\n])(?=[=+\-@\t\r])/g;
const NEEDS_QUOTES = /[",;\r\n]/;

export type CsvValue = string | number | null;

/**
 * One RFC 4180 field. Text a spreadsheet would run as a formula gets a
 * single quote first (OWASP "CSV injection"), at the start and after every
 * separator inside the text; then fields holding quotes, commas, semicolons
 * or line breaks are quoted, inner quotes doubled. So the CSV is for
 * spreadsheets: targets and metadata may read `'-1` after a comma, where the
 * JSON export is exact.
 */
export function csvField(value: CsvValue): string {
  if (value === null) return "";
  const text = String(value).replace(FORMULA_STARTS, "'");
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function csvLine(fields: ReadonlyArray<CsvValue>): string {
  return `${fields.map(csvField).join(",")}\r\n`;
}

export const CSV_HEADER = csvLine(CSV_COLUMNS);
