// npm run export:verify -- <folder or .zip> --vkey <vkey>
// Checks an evidence export's files offline (src/scripts/evidence-check.mjs), from the folder
// they were downloaded into or from the job's archive (GET /v1/jobs/{id}/archive, its files at
// the root or under one folder; read entry by entry, never whole: zip-reader.mjs). Exit 0
// when they are exactly the events the signed manifest names, unaltered and in the log's tree
// (and, without filters, none missing); 1 with a line starting FAIL otherwise; 2 for a usage error.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { checkEvidence } from "./evidence-check.mjs";
import { openZip, ZipError } from "./zip-reader.mjs";

const USAGE = "usage: npm run export:verify -- <folder or .zip of an evidence export> --vkey <vkey or file holding it>";
const args = process.argv.slice(2);
const at = args.indexOf("--vkey");
const vkeyArg = at === -1 ? null : args[at + 1];
const target = args.find((a, i) => !a.startsWith("--") && i !== at + 1);
if (!target || !vkeyArg) {
  console.error(USAGE);
  process.exit(2);
}
const kind = existsSync(target) ? statSync(target) : null;
if (!kind || !(kind.isDirectory() || kind.isFile())) {
  console.error(`error: ${target} is neither a folder nor a file\n${USAGE}`);
  process.exit(2);
}

const fail = (reason) => {
  console.log(`FAIL ${reason}`);
  process.exit(1);
};

/** The export's files: { names, read(name) -> bytes or null, close() }, from a folder or a zip. */
function openExport() {
  if (kind.isFile()) {
    try {
      return openZip(target);
    } catch (error) {
      if (error instanceof ZipError) fail(`${target}: ${error.message}`);
      throw error;
    }
  }
  const names = readdirSync(target).filter((n) => statSync(join(target, n)).isFile());
  return { names, read: (name) => (names.includes(name) ? new Uint8Array(readFileSync(join(target, name))) : null), close: () => {} };
}

try {
  const vkey = existsSync(vkeyArg) ? readFileSync(vkeyArg, "utf8").trim() : vkeyArg;
  const files = openExport();
  const manifest = files.read("manifest.json");
  if (!manifest) fail(`${target} has no manifest.json: not an evidence export, or cut short`);
  let checked = 0;
  const result = await checkEvidence({
    manifest: new TextDecoder().decode(manifest),
    vkey,
    names: files.names,
    readFile: async (name) => {
      // Only plain names: a manifest must not make the check read outside its folder.
      if (!/^[A-Za-z0-9._-]+$/.test(name) || !files.names.includes(name)) return null;
      checked++;
      if (checked % 10 === 0) console.error(`checked ${checked} files...`);
      return files.read(name);
    },
  });
  files.close();
  if (!result.ok) fail(result.reason);
  const scope = result.complete
    ? `every event 1..${result.tree_size} of the log${result.gaps ? ` but ${result.gaps} retention gap(s) the log signed` : ""}`
    : `the events matching ${JSON.stringify(result.filters)}; their completeness is Witness's signed statement, not checkable offline`;
  console.log(`OK ${result.rows} events (${result.erased} with personal data lawfully erased), unaltered and in ${result.origin} at tree size ${result.tree_size}: ${scope}`);
} catch (error) {
  // A damaged archive is a failed check; anything else is one line too, never a stack trace.
  if (error instanceof ZipError) fail(`${target}: ${error.message}`);
  console.error(`error: export:verify could not finish: ${String(error?.message ?? error).split("\n")[0]}`);
  process.exit(1);
}
