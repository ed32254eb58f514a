// npm run keys:create -- <project> [--remote]: prints a new API key alone on the last line.
import { applyMigrations, checkProjectId, createKey, parseCommand } from "./lib.mjs";

const USAGE = `usage: npm run keys:create -- <project> [--remote]
  <project>  1-64 letters, digits, '.', '_' or '-'; created when it does not exist
  --remote   in the deployed database (default: the local one of npm run dev)`;

const { flags, positional } = parseCommand(process.argv.slice(2), { usage: USAGE, flags: ["--remote"], min: 1 });
const remote = flags.has("--remote");
const project = checkProjectId(positional[0]);
if (!remote) applyMigrations();
const { key, prefix } = createKey(project, { remote });
console.log(`Created key ${prefix} for project ${project}. Store it now; it is not shown again:`);
console.log(key);
