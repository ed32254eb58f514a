// npm run projects:tiering -- <project> [<days|off>] [--remote]
// Shows or sets a project's hot window: events received more than <days> days
// ago leave D1 for sealed, compressed segments in R2 (the ARCHIVE bucket), moved by
// the project's ledger as they age (it picks up a new window at its next ingest or
// the daily check); 0 archives everything already received, off
// archives nothing more (what is archived stays archived: nothing brings
// segments back into D1, and the script says how many events that leaves in R2). Get, export, verify, receipts, erasure and retention
// span both tiers, and so do list and search. The plan is a
// column of the control database: archiving changes no event and hides none
// from those reads, so unlike retention it needs no guard in the ledger.
import { checkProjectId, createKey, dbSql, deleteKey, fail, parseCommand, quote, serviceUrl, shardDatabases, sql } from "./lib.mjs";

const MAX_DAYS = 36500;
const USAGE = `usage: npm run projects:tiering -- <project> [<days|off>] [--restore] [--url <base>] [--remote]
  without <days>  shows the hot window
  <days>          keep events received in the last <days> days in D1 (0-${MAX_DAYS}); older ones go to the archive
  off             archive no more events (those already archived stay in R2)
  off --restore   also bring the archived events back into D1, through the running service
  --url <base>    the running service, for --restore (default: $WITNESS_URL, else the address npm run dev printed)
  --remote        in the deployed control database`;

const { flags, options, positional } = parseCommand(process.argv.slice(2), { usage: USAGE, flags: ["--remote", "--restore"], options: ["--url"], min: 1, max: 2 });
const remote = flags.has("--remote");
const project = checkProjectId(positional[0]);
const days = positional[1];
if (days !== undefined && days !== "off" && !(/^\d{1,5}$/.test(days) && Number(days) <= MAX_DAYS)) {
  fail(`days must be a whole number from 0 to ${MAX_DAYS}, or off`);
}
if (flags.has("--restore") && days !== "off") fail("--restore goes with off: archived events come back only when nothing archives them again");
const [row] = sql(`SELECT hot_days, shard FROM projects WHERE id = ${quote(project)}`, { remote });
if (!row) fail(`no project ${project}`);
let hot = row.hot_days;
if (days !== undefined) {
  hot = days === "off" ? null : Number(days);
  sql(`UPDATE projects SET hot_days = ${hot === null ? "NULL" : hot} WHERE id = ${quote(project)}`, { remote });
}
/** Events earlier runs archived: they stay in R2 whatever the hot window says now. */
function archived() {
  const name = shardDatabases().get(row.shard);
  if (!name) return { events: 0, segments: 0 };
  const [a] = dbSql(name, `SELECT count(*) AS segments, coalesce(sum(count), 0) AS events FROM archive_segments WHERE project_id = ${quote(project)}`, { remote });
  return a;
}
const cold = hot === null ? archived() : { events: 0 };
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
console.log(
  hot === null && cold.events > 0
    ? `Project ${project} archives no more events: new ones stay hot (in D1).\n` +
        `The ${plural(cold.events, "event")} archived earlier (${plural(cold.segments, "segment")}) stay in R2: ` +
        "get, list, search, export, verify, receipts, erasure and retention still span them.\n" +
        (flags.has("--restore") ? "Bringing them back into D1 now (--restore)..." : `To bring them back into D1 (hot again): npm run projects:tiering -- ${project} off --restore`)
    : hot === null
    ? `Project ${project} keeps every event hot (in D1).`
    : `Project ${project} keeps ${hot} day${hot === 1 ? "" : "s"} of events hot; its ledger archives older ones to R2 as they age past it${hot === 0 ? " (everything received so far)" : ""}, from the project's next ingest or the daily check on.`,
);

/** --restore: the ledger restores segment after segment (POST /v1/project/restore-archive), newest first. */
if (flags.has("--restore") && cold.events > 0) {
  const url = serviceUrl(options["--url"]);
  const { key, prefix } = createKey(project, { remote }, { label: "npm run projects:tiering --restore" });
  try {
    let total = 0;
    for (;;) {
      let res;
      try {
        res = await fetch(`${url}/v1/project/restore-archive`, { method: "POST", headers: { Authorization: `Bearer ${key}` } });
      } catch {
        fail(`the service at ${url} does not answer; start it (npm run dev) or pass --url <its address>`);
      }
      const body = await res.json().catch(() => null);
      if (!res.ok) fail(`the service refused: ${res.status} ${body?.error?.message ?? ""}`);
      total += body.data.restored;
      console.log(`  ${total} events back in D1; ${plural(body.data.remaining, "segment")} to go`);
      if (body.data.status === "done") break;
    }
    console.log(`Done: every event of project ${project} is hot again (${plural(total, "event")} restored from R2).`);
  } finally {
    deleteKey(prefix, { remote });
  }
}
