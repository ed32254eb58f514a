// Copies the standalone bundle of @scalar/api-reference into the Worker's static
// assets (src/docs-assets/docs/scalar.js), where GET /docs loads it from: the
// reference page works offline and loads nothing from a CDN. Run by wrangler's
// [build] step (dev, deploy) and before the tests; it writes only when the
// bundle changed, so wrangler's watcher does not loop.
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
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
