// npm run projects:retention -- <project> <days|off> [--action <pattern>] [--remote]
// Sets how many days a project keeps its events; the daily cron purges the rest
// and leaves signed gap records, so verify still passes. Without --action the
// rule is the project's default (`*`). --action takes an exact action or a
// prefix ending in `*` (quote it: 'debug.*'); the most specific rule wins.
import { applyMigrations, checkProjectId, fail, quote, sql } from "./lib.mjs";

const USAGE = "usage: npm run projects:retention -- <project> <days|off> [--action <pattern>] [--remote]";
const PATTERN = /^(\*|[^*]{1,255}|[^*]{1,254}\*)$/;
const MAX_RULES = 40; // src/lib/retention.ts binds two values per rule; D1 allows 100 per statement

const argv = process.argv.slice(2);
const positional = [];
let remote = false;
let pattern = "*";
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === "--remote") remote = true;
  else if (argv[i] === "--action") pattern = argv[++i] ?? fail("--action needs a pattern");
  else if (argv[i].startsWith("--")) fail(`unknown option ${argv[i]}\n${USAGE}`);
  else positional.push(argv[i]);
}
if (positional.length !== 2) fail(USAGE);
const project = checkProjectId(positional[0]);
const days = positional[1];
const off = days === "off";
if (!off && !(/^\d{1,5}$/.test(days) && Number(days) >= 1 && Number(days) <= 36500)) {
  fail("days must be a whole number from 1 to 36500, or off to remove the rule");
}
if (!PATTERN.test(pattern)) fail("--action takes an exact action or a prefix ending in * (like debug.*); * only at the end");

if (!remote) applyMigrations();
if (sql(`SELECT 1 AS ok FROM projects WHERE id = ${quote(project)}`, { remote }).length === 0) {
  fail(`no project ${project}; create it with npm run keys:create -- ${project}`);
}
const where = `project_id = ${quote(project)} AND pattern = ${quote(pattern)}`;
if (off) {
  sql(`DELETE FROM retention_rules WHERE ${where}`, { remote });
} else {
  const others = sql(`SELECT COUNT(*) AS n FROM retention_rules WHERE project_id = ${quote(project)} AND pattern <> ${quote(pattern)}`, { remote });
  if (others[0].n >= MAX_RULES) fail(`a project can have at most ${MAX_RULES} retention rules`);
  sql(
    `INSERT INTO retention_rules (project_id, pattern, days) VALUES (${quote(project)}, ${quote(pattern)}, ${Number(days)}) ` +
      "ON CONFLICT (project_id, pattern) DO UPDATE SET days = excluded.days",
    { remote },
  );
}

const rules = sql(`SELECT pattern, days FROM retention_rules WHERE project_id = ${quote(project)} ORDER BY pattern`, { remote });
console.log(`Retention plan of project ${project}:`);
for (const r of rules) console.log(`  ${r.pattern === "*" ? "* (every other action)" : r.pattern}: ${r.days} days`);
if (!rules.some((r) => r.pattern === "*")) console.log("  events no rule matches are kept forever");
console.log("The daily cron purges expired events (locally: curl http://localhost:8787/__scheduled).");
