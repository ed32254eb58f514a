// npm run keys:create -- <project> [--scope ingest,read,admin] [--label <text>] [--remote]:
// prints a new API key alone on the last line. The daily cron records its
// creation in the project's chain (witness.key.created, src/auth/key-audit.ts).
import { applyMigrations, checkLabel, checkProjectId, createKey, parseCommand, parseScopes, quote, sql } from "./lib.mjs";

const USAGE = `usage: npm run keys:create -- <project> [--scope <scopes>] [--label <text>] [--remote]
  <project>         1-64 letters, digits, '.', '_' or '-'; created when it does not exist
  --scope <scopes>  comma-separated, from:
                      ingest  send events: the key an application's servers hold
                      read    every read (events, search, verify, exports, receipts): dashboards, support
                      admin   retention, erasure, streams, keys; implies ingest and read
                    default: admin when the project has no live admin key (a new project: someone
                    must administer it, and that is you), else ingest (the least a key can do)
  --label <text>    what the key is for, 1-100 characters (keys:list shows it)
  --remote          in the deployed database (default: the local one of npm run dev)`;

/** A bad value: one line naming it, exit 2 (as for any usage error), before any database is touched. */
function refuse(message) {
  console.error(`error: ${message}`);
  process.exit(2);
}

const { flags, options, positional } = parseCommand(process.argv.slice(2), {
  usage: USAGE,
  flags: ["--remote"],
  options: ["--scope", "--label"],
  min: 1,
});
const remote = flags.has("--remote");
const project = checkProjectId(positional[0]);
let scopes = null;
let label = null;
try {
  if (options["--scope"] !== undefined) scopes = parseScopes(options["--scope"]);
  if (options["--label"] !== undefined) label = checkLabel(options["--label"]);
} catch (error) {
  refuse(error.message);
}
if (!remote) applyMigrations();

let why = "";
if (scopes === null) {
  const now = quote(new Date().toISOString());
  const [{ n }] = sql(
    `SELECT count(*) AS n FROM api_keys WHERE project_id = ${quote(project)} AND revoked_at IS NULL ` +
      `AND (expires_at IS NULL OR expires_at > ${now}) AND ',' || scopes || ',' LIKE '%,admin,%'`,
    { remote },
  );
  scopes = n === 0 ? ["admin"] : ["ingest"];
  why = n === 0 ? ": the project had no live admin key" : ": the default once the project has an admin key; --scope for more";
}
const { key, prefix } = createKey(project, { remote }, { scopes, label });
console.log(`Created key ${prefix} (scopes: ${scopes.join(",")}${why}) for project ${project}${label ? ` labelled ${JSON.stringify(label)}` : ""}.`);
console.log("Its creation reaches the project's chain with the next daily cron (witness.key.created).");
console.log("Store the key now; it is not shown again:");
console.log(key);
