// Copies the standalone bundle of @scalar/api-reference into the Worker's static
// assets (src/docs-assets/docs/scalar.js), where GET /docs loads it from: the
// reference page works offline and loads nothing from a CDN. Run by wrangler's
// [build] step (dev, deploy) and before the tests; it writes only when the
// bundle changed, so wrangler's watcher does not loop.
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const pkgDir = join(root, "node_modules", "@scalar", "api-reference");
const source = join(pkgDir, "dist", "browser", "standalone.js");
const target = join(root, "src", "docs-assets", "docs", "scalar.js");

const same = existsSync(target) && statSync(target).size === statSync(source).size && readFileSync(target).equals(readFileSync(source));
if (!same) {
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(source, target);
  const { version } = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
  console.log(`docs assets: @scalar/api-reference ${version} standalone bundle -> src/docs-assets/docs/scalar.js`);
}

// The web console's static files (src/pages/console/assets): its scripts bundled by esbuild
// (uPlot and the client's receipt check included, so each page loads one module), its
// stylesheet and uPlot's, into src/docs-assets/console/assets/ (git-ignored), served at
// /console/assets/ without running the Worker. Written only when the bytes changed.
const consoleSource = join(root, "src", "pages", "console", "assets");
const consoleTarget = join(root, "src", "docs-assets", "console", "assets");

function writeIfChanged(file, bytes) {
  if (existsSync(file) && readFileSync(file).equals(Buffer.from(bytes))) return false;
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, bytes);
  return true;
}

const { build } = await import("esbuild");
const bundled = await build({
  absWorkingDir: root,
  entryPoints: ["events.js", "event.js", "jobs.js"].map((f) => join(consoleSource, f)),
  outdir: consoleTarget,
  bundle: true,
  minify: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  write: false,
  logLevel: "silent",
});
let changed = 0;
for (const file of bundled.outputFiles) changed += writeIfChanged(file.path, file.contents) ? 1 : 0;
changed += writeIfChanged(join(consoleTarget, "console.css"), readFileSync(join(consoleSource, "console.css"))) ? 1 : 0;
// The investigation pages' own rules (actor, organization, target), kept beside their components.
changed += writeIfChanged(join(consoleTarget, "investigate.css"), readFileSync(join(root, "src", "pages", "console", "investigate", "investigate.css"))) ? 1 : 0;
changed += writeIfChanged(join(consoleTarget, "uplot.min.css"), readFileSync(join(root, "node_modules", "uplot", "dist", "uPlot.min.css"))) ? 1 : 0;
if (changed > 0) console.log(`console assets: ${changed} file(s) -> src/docs-assets/console/assets/`);
