// npm run projects:limits -- <project> [<events per minute>|default] [--remote]
// Shows or sets a project's ingest budget in events per minute, counted by its
// ledger across all its keys (src/chain/ingest-admission.ts). Past it, ingest
// answers 429 RATE_LIMITED with Retry-After and stores nothing of the request.
// The ledger reads the setting again within a minute; the per-key budget of
// requests (RATE_LIMIT_INGEST_PER_MIN) applies as before.
import { checkProjectId, fail, parseCommand, quote, sql } from "./lib.mjs";

// The same figures as src/chain/ingest-admission.ts (Node loads no TypeScript here).
const DEFAULT = 600_000;
const FLOOR = 1_200;
const MAX = 100_000_000;
const USAGE = `usage: npm run projects:limits -- <project> [<events per minute>|default] [--remote]
  without a value  shows the project's ingest budget
  <n>              sets it to n events per minute (${FLOOR.toLocaleString("en-US")} to ${MAX.toLocaleString("en-US")})
  default          goes back to the default (${DEFAULT.toLocaleString("en-US")} a minute, 10,000 a second)
  --remote         in the deployed control database`;

const { flags, positional } = parseCommand(process.argv.slice(2), { usage: USAGE, flags: ["--remote"], min: 1, max: 2 });
const remote = flags.has("--remote");
const project = checkProjectId(positional[0]);
const value = positional[1];
if (value !== undefined && value !== "default" && !(/^\d{1,9}$/.test(value) && Number(value) >= FLOOR && Number(value) <= MAX)) {
  fail(`events per minute must be a whole number from ${FLOOR.toLocaleString("en-US")} (the spec's 1,200 requests a minute of one key) to ${MAX.toLocaleString("en-US")}, or default`);
}
const [row] = sql(`SELECT ingest_events_per_minute AS budget FROM projects WHERE id = ${quote(project)}`, { remote });
if (!row) fail(`no project ${project}`);
let budget = row.budget;
if (value !== undefined) {
  budget = value === "default" ? null : Number(value);
  sql(`UPDATE projects SET ingest_events_per_minute = ${budget === null ? "NULL" : budget} WHERE id = ${quote(project)}`, { remote });
}
const shown = (budget ?? DEFAULT).toLocaleString("en-US");
console.log(
  `Project ${project} may ingest ${shown} events per minute${budget === null ? " (the default)" : ""}` +
    (value === undefined ? "." : "; its ledger applies it within a minute."),
);
