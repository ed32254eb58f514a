// npm run projects:move -- <project> <shard> [--url <base>] [--remote]
// Moves a project's events to another event shard while it keeps taking
// events. The project's ledger (a Durable Object, the only writer of its
// events) does the work in bounded, resumable steps, so the move goes through
// the running service: this script records the request in the control
// database (projects.move_to, which an API key cannot write), mints a
// short-lived key for the project, drives POST /v1/project/move with it until
// the project is switched to the new shard (the ledger then deletes the old copy
// on its own; --wait watches that too), and deletes the key. Interrupted, it is
// simply run again.
import { checkProjectId, createKey, deleteKey, fail, parseCommand, quote, serviceUrl, shardDatabases, sql } from "./lib.mjs";

const USAGE = `usage: npm run projects:move -- <project> <shard> [--url <base>] [--remote] [--wait]
  <shard>       the target event shard, a number bound as EVENTS_<shard> in wrangler.toml
  --url <base>  the running service (default: $WITNESS_URL, else the address npm run dev printed)
  --remote      use the deployed control database (use with --url)
  --wait        also wait while the service deletes the old copy (about 35 s after the switch)`;

const { flags, options, positional } = parseCommand(process.argv.slice(2), {
  usage: USAGE,
  flags: ["--remote", "--wait"],
  options: ["--url"],
  min: 2,
  max: 2,
});
const remote = flags.has("--remote");
if (remote && !options["--url"] && !process.env.WITNESS_URL) fail(`--remote needs --url <the deployed service's address>\n${USAGE}`);
const url = serviceUrl(options["--url"]);
const project = checkProjectId(positional[0]);
const shards = shardDatabases();
const bound = [...shards.keys()].sort((a, b) => a - b).join(", ");
if (!/^\d{1,4}$/.test(positional[1])) fail(`the shard is a number; wrangler.toml binds shards ${bound}`);
const shard = Number(positional[1]);
if (!shards.has(shard)) fail(`no event shard ${shard}: wrangler.toml binds shards ${bound} (EVENTS_<n>)`);

const [row] = sql(`SELECT shard, move_to FROM projects WHERE id = ${quote(project)}`, { remote });
if (!row) fail(`no project ${project}`);
if (row.move_to !== null && row.move_to !== shard) {
  fail(`project ${project} is being moved to shard ${row.move_to}; finish that first: npm run projects:move -- ${project} ${row.move_to}`);
}
if (row.move_to === null && row.shard === shard) fail(`project ${project} is already on shard ${shard}; nothing to do`);
const resuming = row.move_to === shard;

// Recorded before the key exists: the service only runs a move the control database asks for.
if (!resuming) sql(`UPDATE projects SET move_to = ${shard} WHERE id = ${quote(project)} AND move_to IS NULL`, { remote });
if (!resuming) console.log(`Moving project ${project}: shard ${row.shard} -> ${shard}`);
else if (row.shard === shard) console.log(`Resuming the move of project ${project} to shard ${shard}: already switched; the old copy is deleted next`);
else console.log(`Resuming the move of project ${project}: shard ${row.shard} -> ${shard}`);

class Refused extends Error {}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// Labelled: the chain names this key (its prefix) as the actor of the move's events.
const { key, prefix } = createKey(project, { remote }, { label: "npm run projects:move" });
let answered = false;
try {
  let last = "";
  for (;;) {
    let res;
    try {
      res = await fetch(`${url}/v1/project/move`, {
        method: "POST",
        headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
        body: JSON.stringify({ shard }),
      });
    } catch {
      throw new Refused(`the service at ${url} does not answer; start it (npm run dev) or pass --url <its address>`);
    }
    const json = await res.json().catch(() => null);
    if (!res.ok) throw new Refused(`the service refused: ${res.status} ${json?.error?.message ?? ""}`);
    answered = true;
    const p = json.data;
    const line =
      p.status === "copying" ? `copying: events through seq ${p.copiedThrough} of ${p.head}` :
      p.status === "draining" ? `switched to shard ${p.to}; the old copy stays readable ${p.waitSeconds}s more (isolates' shard cache)` :
      p.status === "deleting" ? `deleting the old copy on shard ${p.from}` :
      p.status === "clearing" ? `clearing leftovers of an earlier attempt on shard ${p.to}` : "";
    // One line per phase; copying also on each advance.
    const phase = p.status === "copying" ? line : p.status;
    if (line && phase !== last) console.log(`  ${line}`);
    last = phase;
    if (p.status === "draining" && !flags.has("--wait")) {
      console.log(`Done: project ${project} is on shard ${shard} (${p.head} events in its chain); its ledger deletes the old copy on shard ${p.from} in about ${p.waitSeconds} s.`);
      break;
    }
    if (p.status === "done") {
      console.log(`Done: project ${project} is on shard ${shard} (${p.head} events in its chain); the old copy is deleted.`);
      break;
    }
    if (p.status === "draining") await sleep(Math.min(5, Math.max(1, p.waitSeconds)) * 1000);
  }
} catch (error) {
  console.error(`error: ${error instanceof Refused ? error.message : error}`);
  // Nothing started: withdraw the request so the project is as it was.
  if (!answered && !resuming) sql(`UPDATE projects SET move_to = NULL WHERE id = ${quote(project)} AND move_to = ${shard}`, { remote });
  else console.error(`The move is recorded and resumes where it stopped: npm run projects:move -- ${project} ${shard}`);
  process.exitCode = 1;
} finally {
  deleteKey(prefix, { remote });
}
