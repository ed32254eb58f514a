/**
 * The house's one direction of imports (src/README.md): every import of src/,
 * type-only ones too, points to a lower layer or stays in its own folder;
 * folders of one layer never import each other; no file-level cycle; routes
 * import no other route and run no SQL. A failure names the file and line.
 */
import { describe, expect, it } from "vitest";

/** Bottom to top; the folders of one row are one layer. "." is src/'s own files (app.ts, index.ts, scheduled.ts). */
const LAYERS: string[][] = [
  ["lib"],
  ["tlog", "sealing", "client"],
  ["db"],
  ["model"],
  ["catalog"],
  ["storage"],
  ["chain"],
  ["log"],
  ["reads", "streams", "receipts", "auth", "embed"],
  ["jobs", "alerts"],
  ["durable"],
  ["schemas"],
  ["middleware"],
  ["pages"],
  ["routes"],
  [".", "scripts"],
];

const sources = import.meta.glob(["../src/**/*.{ts,tsx,js,mjs}", "!../src/**/*.d.ts", "!../src/docs-assets/**"], {
  query: "?raw",
  import: "default",
  eager: true,
}) as Record<string, string>;

const files = new Map(Object.entries(sources).map(([key, text]) => [key.slice("../src/".length), text]));
const rank = new Map(LAYERS.flatMap((row, i) => row.map((folder) => [folder, i] as const)));
const folderOf = (file: string) => (file.includes("/") ? file.slice(0, file.indexOf("/")) : ".");

interface Import {
  from: string;
  to: string;
  line: number;
}

const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)["'](\.{1,2}\/[^"']+)["']/gm;

function resolve(from: string, spec: string): string | null {
  const parts = from.split("/").slice(0, -1);
  for (const piece of spec.split("/")) {
    if (piece === "..") parts.pop();
    else if (piece !== ".") parts.push(piece);
  }
  const base = parts.join("/");
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, `${base}.js`, `${base}.mjs`, `${base}/index.ts`]) if (files.has(candidate)) return candidate;
  return null;
}

const imports: Import[] = [...files].flatMap(([from, text]) =>
  [...text.matchAll(SPECIFIER)].flatMap((m) => {
    const to = resolve(from, m[1]);
    return to ? [{ from, to, line: text.slice(0, m.index).split("\n").length }] : [];
  }),
);
const where = (i: Import) => `src/${i.from}:${i.line} imports src/${i.to}`;

describe("layers", () => {
  it("reads the whole tree", () => {
    expect(files.size).toBeGreaterThan(200);
    expect(imports.length).toBeGreaterThan(500);
    const unplaced = [...new Set([...files.keys()].map(folderOf))].filter((f) => !rank.has(f));
    expect(unplaced, "folders of src/ with no layer in LAYERS").toEqual([]);
  });

  it("imports only downward, or within a folder", () => {
    const upward = imports.filter((i) => {
      const [a, b] = [folderOf(i.from), folderOf(i.to)];
      return a !== b && !(rank.get(b)! < rank.get(a)!);
    });
    expect(upward.map(where)).toEqual([]);
  });

  it("has no cycle of files", () => {
    const next = new Map<string, Import[]>();
    for (const i of imports) next.set(i.from, [...(next.get(i.from) ?? []), i]);
    const state = new Map<string, "open" | "done">();
    const cycles: string[] = [];
    const visit = (file: string, path: Import[]) => {
      state.set(file, "open");
      for (const i of next.get(file) ?? []) {
        if (state.get(i.to) === "open") {
          const start = path.findIndex((p) => p.from === i.to);
          cycles.push([...path.slice(start === -1 ? path.length : start), i].map(where).join(" -> "));
        } else if (!state.has(i.to)) visit(i.to, [...path, i]);
      }
      state.set(file, "done");
    };
    for (const file of files.keys()) if (!state.has(file)) visit(file, []);
    expect(cycles).toEqual([]);
  });

  it("keeps routes to calling services: no route imports another, none runs SQL", () => {
    const routeToRoute = imports.filter((i) => i.from.startsWith("routes/") && i.to.startsWith("routes/"));
    expect(routeToRoute.map(where)).toEqual([]);
    const sql = [...files].flatMap(([file, text]) =>
      file.startsWith("routes/") ? text.split("\n").flatMap((line, n) => (/\.(prepare|batch)\(/.test(line) ? [`src/${file}:${n + 1}`] : [])) : [],
    );
    expect(sql).toEqual([]);
  });
});
