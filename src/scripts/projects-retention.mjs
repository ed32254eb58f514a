// npm run projects:retention -- <project> [<days|off>] [--action <pattern>] [--url <base>] [--remote]
// Shows or sets how many days a project keeps its events; the daily cron purges
// the rest and leaves signed gap records, so verify still passes. The plan lives
// in the project's ledger (a Durable Object), so it is set through the running
// service: the script mints a short-lived key for the project (labelled
// "npm run projects:retention"), calls PUT /v1/retention with it and deletes it. Without <days> it only shows the plan.
// A locked plan is checked there like any other request: a change that would
// expire events sooner is refused (409 RETENTION_LOCKED) and the plan stays.
import { checkProjectId, createKey, deleteKey, fail, parseCommand, quote, serviceUrl, sql } from "./lib.mjs";

const USAGE = `usage: npm run projects:retention -- <project> [<days|off>] [--action <pattern>] [--url <base>] [--remote]
  without <days>      shows the plan
  <days>              keep events of --action (default *: every action no other rule matches) this many days, 1-36500
  off                 removes the rule for --action
  --action <pattern>  an exact action, or a prefix ending in * (like debug.*)
  --url <base>        the running service (default: $WITNESS_URL, else the address npm run dev printed)
  --remote            mint the short-lived key in the deployed database (use with --url)`;
const PATTERN = /^(\*|[^*]{1,255}|[^*]{1,254}\*)$/;

const { flags, options, positional } = parseCommand(process.argv.slice(2), {
  usage: USAGE,
  flags: ["--remote"],
  options: ["--action", "--url"],
  min: 1,
  max: 2,
});
const remote = flags.has("--remote");
const pattern = options["--action"] ?? "*";
if (remote && !options["--url"] && !process.env.WITNESS_URL) fail(`--remote needs --url <the deployed service's address>\n${USAGE}`);
const url = serviceUrl(options["--url"]);
const project = checkProjectId(positional[0]);
const days = positional[1];
if (days !== undefined && days !== "off" && !(/^\d{1,5}$/.test(days) && Number(days) >= 1 && Number(days) <= 36500)) {
  fail("days must be a whole number from 1 to 36500, or off to remove the rule");
}
if (!PATTERN.test(pattern)) fail("--action takes an exact action or a prefix ending in * (like debug.*); * only at the end");
if (sql(`SELECT 1 AS ok FROM projects WHERE id = ${quote(project)}`, { remote }).length === 0) {
  fail(`no project ${project}; create it with npm run keys:create -- ${project}`);
}

/** Inside the try: the short-lived key must be deleted however this ends. */
class Refused extends Error {}
// Labelled, so the chain's witness.retention.changed (actor: this key's prefix) says who changed the plan.
const { key, prefix } = createKey(project, { remote }, { label: "npm run projects:retention" });
try {
  const call = async (method, body) => {
    let res;
    try {
      res = await fetch(`${url}/v1/retention`, {
        method,
        headers: { Authorization: `Bearer ${key}`, ...(body ? { "Content-Type": "application/json" } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
    } catch {
      throw new Refused(`the service at ${url} does not answer; start it (npm run dev) or pass --url <its address>`);
    }
    const json = await res.json().catch(() => null);
    if (!res.ok) throw new Refused(`the service refused: ${res.status} ${json?.error?.code ?? ""}: ${json?.error?.message ?? ""}`);
    return json.data;
  };
  let plan = await call("GET");
  if (days !== undefined) {
    const others = plan.rules.filter((r) => r.pattern !== pattern);
    plan = await call("PUT", { rules: days === "off" ? others : [...others, { pattern, days: Number(days) }] });
  }
  const { rules } = plan;
  console.log(`Retention plan of project ${project}${plan.locked ? ` (locked since ${plan.locked_at}: it may only keep events longer)` : ""}:`);
  for (const r of rules) console.log(`  ${r.pattern === "*" ? "* (every other action)" : r.pattern}: ${r.days} days`);
  if (!rules.some((r) => r.pattern === "*")) console.log("  events no rule matches are kept forever");
  console.log(`The daily cron purges expired events (locally: curl ${url}/__scheduled).`);
} catch (error) {
  console.error(`error: ${error instanceof Refused ? error.message : error}`);
  process.exitCode = 1;
} finally {
  deleteKey(prefix, { remote });
}
