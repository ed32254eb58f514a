// npm run export:verify -- <folder> --vkey <vkey>
// Checks an evidence export's files offline (src/scripts/evidence-check.mjs): exit 0
// when they are exactly the events the signed manifest names, unaltered and in the
// log's tree (and, without filters, none missing); 1 with a line starting FAIL
// otherwise; 2 for a usage error.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { checkEvidence } from "./evidence-check.mjs";

const USAGE = "usage: npm run export:verify -- <folder> --vkey <vkey or file holding it>";
const args = process.argv.slice(2);
const at = args.indexOf("--vkey");
const vkeyArg = at === -1 ? null : args[at + 1];
const folder = args.find((a, i) => !a.startsWith("--") && i !== at + 1);
if (!folder || !vkeyArg) {
  console.error(USAGE);
  process.exit(2);
}
if (!existsSync(folder) || !statSync(folder).isDirectory()) {
  console.error(`error: ${folder} is not a folder\n${USAGE}`);
  process.exit(2);
}
const vkey = existsSync(vkeyArg) ? readFileSync(vkeyArg, "utf8").trim() : vkeyArg;
const manifestPath = join(folder, "manifest.json");
if (!existsSync(manifestPath)) {
  console.log(`FAIL ${folder} has no manifest.json: not an evidence export, or cut short`);
  process.exit(1);
}
const names = readdirSync(folder).filter((n) => statSync(join(folder, n)).isFile());
let checked = 0;
const result = await checkEvidence({
  manifest: readFileSync(manifestPath, "utf8"),
  vkey,
  names,
  readFile: async (name) => {
    // Only plain names: a manifest must not make the check read outside its folder.
    if (!/^[A-Za-z0-9._-]+$/.test(name) || !names.includes(name)) return null;
    checked++;
    if (checked % 10 === 0) console.error(`checked ${checked} files...`);
    return new Uint8Array(readFileSync(join(folder, name)));
  },
});
if (!result.ok) {
  console.log(`FAIL ${result.reason}`);
  process.exit(1);
}
const scope = result.complete
  ? `every event 1..${result.tree_size} of the log${result.gaps ? ` but ${result.gaps} retention gap(s) the log signed` : ""}`
  : `the events matching ${JSON.stringify(result.filters)}; their completeness is Witness's signed statement, not checkable offline`;
console.log(`OK ${result.rows} events (${result.erased} with personal data lawfully erased), unaltered and in ${result.origin} at tree size ${result.tree_size}: ${scope}`);
