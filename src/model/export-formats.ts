/**
 * How an export renders rows, apart from how it walks them: the archive's
 * export companions (src/storage) render segments with the same formats, and
 * importing them from here keeps storage from depending on the export walk,
 * which itself reads the archive.
 */
import type { EventRow } from "../db/schema";
import { CSV_COLUMNS, CSV_HEADER, csvLine, type CsvValue } from "./csv";
import { eventJson, SHAPE_COLUMNS, shapeRowOf, type Display, type ShapeRow } from "./event-shape";
import { ocsfJson, type OcsfClass } from "./ocsf";

export interface ExportFormat {
  contentType: string;
  extension: string;
  head: string;
  /** The columns read for each event, in the order line() gets their values. */
  columns: ReadonlyArray<keyof EventRow>;
  line(cells: unknown[], first: boolean): string;
  /** What line() puts before an element that is not the first: before a run of pre-rendered lines that does not open the export. */
  between: string;
  tail: string;
}

// Rows are read as plain arrays (D1 raw()): for a million rows, building an
// object per row costs about a third of the export's time.
export const FORMATS: Record<"csv" | "json", ExportFormat> = {
  csv: {
    contentType: "text/csv; charset=utf-8",
    extension: "csv",
    head: CSV_HEADER,
    columns: CSV_COLUMNS,
    line: (cells) => csvLine(cells as CsvValue[]),
    between: "",
    tail: "",
  },
  json: {
    contentType: "application/json; charset=utf-8",
    extension: "json",
    head: "[",
    columns: SHAPE_COLUMNS,
    line: (cells, first) => (first ? "" : ",") + eventJson(shapeRowOf(cells)),
    between: ",",
    tail: "]",
  },
};

export type ExportFormatName = "csv" | "json" | "ocsf";

/** What the OCSF lines need of the project's catalog: each action's class, and the sentence for `message`. */
export interface OcsfView {
  classes: ReadonlyMap<string, OcsfClass>;
  display?: Display;
}

/**
 * A format by name. `ocsf` (issue 37): a JSON array of OCSF events
 * (src/model/ocsf.ts), each action in the class its catalog schema names. It
 * has no export companions: archived segments are written row by row.
 */
export function exportFormat(name: ExportFormatName, view: OcsfView = { classes: new Map() }): ExportFormat {
  if (name !== "ocsf") return FORMATS[name];
  const write = ocsfWriter(view);
  return { ...FORMATS.json, extension: "ocsf.json", line: (cells, first) => (first ? "" : ",") + write(shapeRowOf(cells)) };
}

/** One event as OCSF JSON text, in the class its action's schema names, its sentence as `message`: the feed, streams and exports all write it so. */
export function ocsfWriter({ classes, display }: OcsfView): (row: ShapeRow) => string {
  return (row) => {
    const sentence = display?.(row, { actor_email: row.actor_email, metadata: row.metadata, changes: row.changes ?? null }) ?? null;
    return ocsfJson(row, { display: sentence, cls: classes.get(row.action) ?? null });
  };
}
