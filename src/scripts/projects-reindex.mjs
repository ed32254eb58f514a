// npm run projects:reindex -- <project> [--archived] [--remote]
// Puts a project's hot events that lists or reads by id no longer find back into their indexes: the events
// verify reports as index_damaged, after a row standing in for their index entries (a commit's span, an
// address run, a target type set, an action, organization or address set, a project tag, a row of event_targets, a search
// group's entry)
// was deleted or altered in D1 (src/model/stand-ins.ts). Their marks are cleared, so the project's indexes hold
// them as they hold any event written before storage v2 (a few index rows each); a lone live event's project
// tag row, which public receipts read, the event_targets rows of targets past the second and the entries of
// closed search groups are written again. The events
// themselves, and every other row, are left as they are; a second run finds nothing. Then run
// GET /v1/events/verify again: the events are found, and it is ok.
// With --archived it also reads each archived segment of the project from R2 (one wrangler call a segment, with a
// line of progress every 100) and writes its index row's time bounds, receive times and id tag again from its rows
// when they no longer bound them (storage/archive-walk.ts, unbounded), as sealSegment first wrote them; a segment
// whose bytes are not the ones its row recorded is archive_damaged, not this, and is left as it is.
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { checkProjectId, dbSql, fail, parseCommand, quote, r2BucketName, shardDatabases, sql, wrangler } from "./lib.mjs";
import { hasGroupEntry, missingGroupsSql, needsGroupEntry } from "../model/search-index.ts";
import { rowsBySeq, seqEdge } from "../model/row-keys.ts";
import { checkedRowsSql, ID_SPAN_HOLDS, tagOfIdSql } from "../model/stand-ins.ts";
import { segmentBounds } from "../storage/segment-bounds.ts";
import { inPeriod, PERIODS_SQL } from "../model/periods.ts";

const USAGE = `usage: npm run projects:reindex -- <project> [--archived] [--remote]
  puts the project's hot events that verify reports as index_damaged back into their indexes
  --archived  also rewrites archived segments' index rows that no longer bound their events (reads each from R2)
  --remote    in the deployed databases and bucket`;

/** Seqs a statement looks at: about 0.2 s of D1's time (3 µs a row), far inside its 30 s a query. */
const STEP = 50_000;

const { flags, positional } = parseCommand(process.argv.slice(2), { usage: USAGE, flags: ["--archived", "--remote"], min: 1, max: 1 });
const remote = flags.has("--remote");
const project = checkProjectId(positional[0]);
const [row] = sql(`SELECT shard FROM projects WHERE id = ${quote(project)}`, { remote });
if (!row) fail(`no project ${project}`);
const shard = shardDatabases().get(row.shard);
if (!shard) fail(`project ${project} is on shard ${row.shard}, which wrangler.toml does not bind`);
/**
 * The hot events of one arm of the shard (the main tables, null, or a period: src/model/periods.ts) put back, each
 * statement read in the arm's tables (a period is self-consistent): how many.
 */
function reindexArm(arm) {
  const armSql = (command) => dbSql(shard, inPeriod(command, arm), { remote });
  const [range] = armSql(`SELECT ${seqEdge(quote(project), false)} AS first, ${seqEdge(quote(project), true)} AS last`);
  let repaired = 0;
  // An aggregate answers one row, first and last null when the project has no hot event here.
  if (range.first === null) return 0;
  for (let from = range.first; from <= range.last; from += STEP) {
    const to = Math.min(from + STEP - 1, range.last);
    const seqs = { project: quote(project), lo: String(from), hi: String(to) };
    const within = `r.row_id IN (SELECT e.row_id FROM ${rowsBySeq({ ...seqs, columns: "e.row_id" })} e)`;
    // A target past the second whose row is gone or points at another event: the row again (before the update, which
    // would otherwise clear marks that hold the event as they should).
    const targets = armSql(
      "INSERT OR REPLACE INTO event_targets (project_id, type, id, occurred_at, seq, row_id) " +
        "SELECT r.project_id, j.value ->> 'type', j.value ->> 'id', r.occurred_at, r.seq, r.row_id FROM events r CROSS JOIN json_each(r.targets) j " +
        `WHERE ${within} AND json_array_length(r.targets) > 2 AND j.key > 1 AND NOT EXISTS (SELECT 1 FROM event_targets t WHERE t.project_id = r.project_id ` +
        "AND t.type = (j.value ->> 'type') AND t.id = (j.value ->> 'id') AND t.occurred_at = r.occurred_at AND t.seq = r.seq AND t.row_id = r.row_id) RETURNING seq",
    );
    // A closed search group whose entry is gone: the entry again, from its rows' stored words (an FTS5 table answers
    // no RETURNING, so its events are counted first).
    const unsearched = armSql(`SELECT r.seq FROM events r WHERE ${within} AND r.search_words IS NOT NULL AND ${needsGroupEntry("r")} AND NOT ${hasGroupEntry("r")}`);
    if (unsearched.length > 0) armSql(missingGroupsSql(project, from, to));
    // RETURNING: the rows it changed, counted the same locally and deployed.
    const changed = armSql(
      // The id index takes only a row whose span is gone: a span goes with the last of its rows found through it.
      `UPDATE events AS r SET id_indexed = CASE WHEN r.id_indexed = 0 AND NOT ${ID_SPAN_HOLDS} THEN 1 ELSE r.id_indexed END, ` +
        "time_in_span = 0, ip_run = 0, type_sets = 0, action_in_set = 0, org_in_set = 0 " +
        `WHERE ${within} AND r.seq IN (SELECT seq FROM (${checkedRowsSql("seq", seqs, STEP)}) WHERE unlisted = 1) RETURNING seq`,
    );
    // A lone live row found by no receipt: its project's tag row again (the update above counted it and left it as it was).
    armSql(
      `INSERT INTO project_tags (tag, project_id) SELECT DISTINCT ${tagOfIdSql("r.id")}, r.project_id FROM events r ` +
        `WHERE ${within} AND r.id_indexed = 2 ON CONFLICT DO NOTHING`,
    );
    const put = new Set([...targets, ...unsearched, ...changed].map((r) => r.seq)).size;
    repaired += put;
    if (range.last > range.first + STEP) console.log(`seqs ${from.toLocaleString("en-US")}-${to.toLocaleString("en-US")} of ${range.last.toLocaleString("en-US")}: ${put} put back`);
  }
  return repaired;
}

// Every arm of the shard: the project's hot events may be in several.
const arms = [null, ...dbSql(shard, PERIODS_SQL, { remote }).map((r) => r.n)];
let repaired = 0;
for (const arm of arms) repaired += reindexArm(arm);
/** Archived segments whose index row no longer bounds their rows, rewritten from the rows: how many segments, and events in them. */
async function reboundArchived() {
  const bucket = r2BucketName("ARCHIVE");
  const segments = dbSql(
    shard,
    "SELECT first_seq, sha256, object_key, first_occurred_at, last_occurred_at, first_received_at, last_received_at, id_tag " +
      `FROM archive_segments WHERE project_id = ${quote(project)} ORDER BY first_seq`,
    { remote },
  );
  const dir = mkdtempSync(join(tmpdir(), "witness-reindex-"));
  const file = join(dir, "segment");
  let fixed = 0;
  let events = 0;
  try {
    for (const [i, segment] of segments.entries()) {
      if (i > 0 && i % 100 === 0) console.log(`archived segments: ${i.toLocaleString("en-US")} of ${segments.length.toLocaleString("en-US")} read, ${fixed} rewritten`);
      wrangler(["r2", "object", "get", `${bucket}/${segment.object_key}`, "--file", file, remote ? "--remote" : "--local"], { quiet: true });
      const bytes = readFileSync(file);
      if (createHash("sha256").update(bytes).digest("hex") !== segment.sha256) {
        console.log(`archived segment at seq ${segment.first_seq}: not the bytes its index row recorded (verify says archive_damaged); left as it is`);
        continue;
      }
      const text = gunzipSync(bytes).toString("utf8");
      const rows = text === "" ? [] : text.split("\n").map((line) => JSON.parse(line));
      if (rows.length === 0) continue;
      // As sealSegment wrote them; a tag only where the row had one (a segment without keeps its archive_ids rows).
      const bounds = await segmentBounds(project, rows);
      if (segment.id_tag === null) bounds.id_tag = null;
      const changed = Object.entries(bounds).filter(([column, value]) => segment[column] !== value);
      if (changed.length === 0) continue;
      dbSql(
        shard,
        `UPDATE archive_segments SET ${changed.map(([column, value]) => `${column} = ${value === null ? "NULL" : quote(String(value))}`).join(", ")} ` +
          `WHERE project_id = ${quote(project)} AND first_seq = ${segment.first_seq} AND sha256 = ${quote(segment.sha256)}`,
        { remote },
      );
      fixed++;
      events += rows.length;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { fixed, events };
}

const archived = flags.has("--archived") ? await reboundArchived() : null;
if (archived && archived.fixed > 0) {
  console.log(`archived: ${archived.fixed.toLocaleString("en-US")} ${archived.fixed === 1 ? "segment's index row" : "segments' index rows"} written again from their ${archived.events.toLocaleString("en-US")} events`);
}
const found = repaired + (archived?.events ?? 0);
const which = archived === null ? "hot " : "";
const split = archived === null ? "" : ` (${repaired.toLocaleString("en-US")} hot, ${archived.events.toLocaleString("en-US")} archived)`;
console.log(
  found === 0
    ? `Project ${project}: every ${archived === null ? "hot event" : "event, hot and archived,"} is in its indexes; nothing to do.`
    : `Project ${project}: ${found.toLocaleString("en-US")} ${which}${found === 1 ? "event is" : "events are"} back in their indexes${split}; GET /v1/events/verify will find ${found === 1 ? "it" : "them"}.`,
);
