// npm run projects:reindex -- <project> [--remote]
// Puts a project's hot events that lists or reads by id no longer find back into their indexes: the events
// verify reports as index_damaged, after a row standing in for their index entries (a commit's span, an
// address run, a target type set, an action set, a project tag, a row of event_targets) was deleted or altered
// in D1 (src/model/stand-ins.ts). Their marks are cleared, so the project's indexes hold them as they hold any
// event written before storage v2 (a few index rows each); a lone live event's project tag row, which public
// receipts read, and the event_targets rows of targets past the second are written again. The events themselves, and every other row, are left as they are; a second run
// finds nothing. Then run GET /v1/events/verify again: the events are found, and it is ok.
import { checkProjectId, dbSql, fail, parseCommand, quote, shardDatabases, sql } from "./lib.mjs";
import { ID_SPAN_HOLDS, tagOfIdSql, UNLISTED } from "../model/stand-ins.ts";

const USAGE = `usage: npm run projects:reindex -- <project> [--remote]
  puts the project's hot events that verify reports as index_damaged back into their indexes
  --remote  in the deployed databases`;

/** Seqs a statement looks at: about 0.2 s of D1's time (3 µs a row), far inside its 30 s a query. */
const STEP = 50_000;

const { flags, positional } = parseCommand(process.argv.slice(2), { usage: USAGE, flags: ["--remote"], min: 1, max: 1 });
const remote = flags.has("--remote");
const project = checkProjectId(positional[0]);
const [row] = sql(`SELECT shard FROM projects WHERE id = ${quote(project)}`, { remote });
if (!row) fail(`no project ${project}`);
const shard = shardDatabases().get(row.shard);
if (!shard) fail(`project ${project} is on shard ${row.shard}, which wrangler.toml does not bind`);
const [range] = dbSql(shard, `SELECT min(seq) AS first, max(seq) AS last FROM events WHERE project_id = ${quote(project)}`, { remote });
let repaired = 0;
// An aggregate answers one row, first and last null when the project has no hot event.
if (range.first !== null) {
  for (let from = range.first; from <= range.last; from += STEP) {
    const to = Math.min(from + STEP - 1, range.last);
    const within = `r.project_id = ${quote(project)} AND r.seq BETWEEN ${from} AND ${to}`;
    // A target past the second whose row is gone or points at another event: the row again (before the update, which
    // would otherwise clear marks that hold the event as they should).
    const targets = dbSql(
      shard,
      "INSERT OR REPLACE INTO event_targets (project_id, type, id, occurred_at, seq, row_id) " +
        "SELECT r.project_id, j.value ->> 'type', j.value ->> 'id', r.occurred_at, r.seq, r.row_id FROM events r CROSS JOIN json_each(r.targets) j " +
        `WHERE ${within} AND json_array_length(r.targets) > 2 AND j.key > 1 AND NOT EXISTS (SELECT 1 FROM event_targets t WHERE t.project_id = r.project_id ` +
        "AND t.type = (j.value ->> 'type') AND t.id = (j.value ->> 'id') AND t.occurred_at = r.occurred_at AND t.seq = r.seq AND t.row_id = r.row_id) RETURNING seq",
      { remote },
    );
    // RETURNING: the rows it changed, counted the same locally and deployed.
    const changed = dbSql(
      shard,
      // The id index takes only a row whose span is gone: a span goes with the last of its rows found through it.
      `UPDATE events AS r SET id_indexed = CASE WHEN r.id_indexed = 0 AND NOT ${ID_SPAN_HOLDS} THEN 1 ELSE r.id_indexed END, ` +
        "time_in_span = 0, ip_run = 0, type_sets = 0, action_in_set = 0 " +
        `WHERE ${within} AND ${UNLISTED} RETURNING seq`,
      { remote },
    );
    // A lone live row found by no receipt: its project's tag row again (the update above counted it and left it as it was).
    dbSql(
      shard,
      `INSERT INTO project_tags (tag, project_id) SELECT DISTINCT ${tagOfIdSql("r.id")}, r.project_id FROM events r ` +
        `WHERE ${within} AND r.id_indexed = 2 ON CONFLICT DO NOTHING`,
      { remote },
    );
    const put = new Set([...targets, ...changed].map((r) => r.seq)).size;
    repaired += put;
    if (range.last > range.first + STEP) console.log(`seqs ${from.toLocaleString("en-US")}-${to.toLocaleString("en-US")} of ${range.last.toLocaleString("en-US")}: ${put} put back`);
  }
}
console.log(
  repaired === 0
    ? `Project ${project}: every hot event is in its indexes; nothing to do.`
    : `Project ${project}: ${repaired.toLocaleString("en-US")} hot ${repaired === 1 ? "event is" : "events are"} back in their indexes; GET /v1/events/verify will find ${repaired === 1 ? "it" : "them"}.`,
);
