// npm run keys:create -- <project> [--remote]: prints a new API key alone on the last line.
import { applyMigrations, checkProjectId, createKey, parseArgs } from "./lib.mjs";

const { remote, positional } = parseArgs(process.argv.slice(2));
const project = checkProjectId(positional[0]);
if (!remote) applyMigrations();
const { key, prefix } = createKey(project, { remote });
console.log(`Created key ${prefix} for project ${project}. Store it now; it is not shown again:`);
console.log(key);
