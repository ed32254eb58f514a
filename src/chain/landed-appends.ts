import { idTag, locatedIdsFrom, tagSuffix } from "../model/event-id";
import { SHAPE_SELECT, shapeRows, type ShapeRow } from "../model/event-shape";
import { rowsBySeq } from "../model/row-keys";
import { markStatement } from "../storage/own-writes";
import { armDb, withShardArms, type Arm } from "../model/periods";

/**
 * Whether an append whose answer never came back landed anyway.
 *
 * The ledger stores a commit in one D1 batch, then answers. When the runtime
 * stops it in between (a deploy resets the object, the machine goes away), the
 * worker's call fails although the events are stored, and answering "nothing
 * was stored, safe to retry" would make the client's retry store them twice.
 * So every append carries a name the worker made up (a random token), which
 * the commit keeps on its span row (migrations/0032_named_appends.sql: bytes,
 * no row of its own), or a commit of one event on that event's row, which has
 * no span (migrations/0036_lone_commit_names.sql, 0037), and a worker whose call
 * failed looks for it here: found, the append is answered as stored, with its
 * events; not found, it did not land and the failure stands.
 *
 * "Not found" must stay true: a stopped ledger may have sent its batch, which
 * D1 can run after the look. So the look also gives the append up
 * (migrations/0034_given_up_appends.sql), in the same D1 batch: a commit that
 * names a given-up append is refused whole, so it lands before the look or
 * never. A ledger that lived on and pooled that append with others commits
 * the others again without it (chain/group-commit.ts, givenUpAmong).
 */

/** How far before the worker's own clock a commit's received_at may lie: the ledger runs on another machine's clock. */
const CLOCK_SKEW_MS = 30_000;

/** How long a given-up name is kept: far past any batch in flight (D1 stops a query at 30 s). */
const GIVEN_UP_KEPT_MS = 24 * 60 * 60 * 1000;

/**
 * The events of the append named `token`, in chain order, or null when no
 * commit since `sentAtMs` (the worker's clock when it called the ledger)
 * holds it, and none ever will. Gives the name up and, in the same batch,
 * looks among the shard's commits since `sentAtMs`, in each of its arms
 * (model/periods.ts): their spans (whose key starts with received_at), and
 * the lone rows of commits of one event, in the id index between the ids
 * minted then and now (a located id starts with its received_at, and ends
 * with its project's tag, which the index entry is checked for before its
 * row is read), or, live, in the project's time index between then and now
 * (their occurred_at is their received_at: model/event-lookup.ts). Then the
 * append's seq range, in the arm that holds its name.
 * The daily cron drops the names (dropStaleGivenUpAppends).
 */
export async function findLandedAppend(db: D1Database, projectId: string, token: string, sentAtMs: number, by: "ledger" | "worker" = "ledger"): Promise<ShapeRow[] | null> {
  const since = new Date(sentAtMs - CLOCK_SKEW_MS).toISOString();
  // A commit that landed did so before the look (the given-up name refuses any later one), by the ledger's clock.
  const until = Date.now() + CLOCK_SKEW_MS + 1;
  const tag = tagSuffix(await idTag(projectId));
  // While the project's backlog mark is set (chain/commit-backlog.ts), nothing is given up: the append may be in the
  // ledger's journal, answered before D1 has it. The ledger knows (it asks its backlog first); a worker does not.
  const giveUp = db
    .prepare("INSERT INTO given_up_appends (token, given_up_at) SELECT ?1, ?2 WHERE NOT EXISTS (SELECT 1 FROM ingest_backlog WHERE project_id = ?3) ON CONFLICT DO NOTHING")
    .bind(token, new Date().toISOString(), projectId);
  const look = (arm: D1Database) =>
    arm
      .prepare(
        "SELECT j.value ->> 1 AS first, j.value ->> 2 AS last FROM commit_spans c, json_each(c.appends) j " +
          "WHERE c.received_at >= ?1 AND c.project_id = ?2 AND c.appends IS NOT NULL AND j.value ->> 0 = ?3 " +
          "UNION ALL SELECT e.seq, e.seq FROM events e INDEXED BY events_legacy_id_unique " +
          "WHERE e.id >= ?4 AND e.id < ?5 AND e.id_indexed = 1 AND substr(e.id, 29) = ?6 AND e.project_id = ?2 AND e.append_name = ?3 " +
          "UNION ALL SELECT e.seq, e.seq FROM events e INDEXED BY events_project_time_idx " +
          "WHERE e.project_id = ?2 AND e.occurred_at >= ?1 AND e.occurred_at < ?7 AND e.id_indexed = 2 AND e.time_in_span = 0 AND e.append_name = ?3",
      )
      .bind(since, projectId, token, locatedIdsFrom(sentAtMs - CLOCK_SKEW_MS), locatedIdsFrom(until), tag, new Date(until).toISOString());
  // The commit may have landed in any of the shard's arms (model/periods.ts): each is looked in, in the give-up's batch.
  const lookIn = async (arms: Arm[]) => {
    const results = await db.batch<{ first: number; last: number }>([giveUp, ...arms.map((n) => look(armDb(db, n))), markStatement(db, projectId)]);
    const at = arms.findIndex((_, i) => results[1 + i].results.length > 0);
    return { arm: at < 0 ? null : arms[at], hit: at < 0 ? undefined : results[1 + at].results[0], marked: results[results.length - 1].results.length > 0 };
  };
  // A period dropped since the arms were listed (its rows archived, long past any append in flight): listed again.
  const { arm, hit, marked } = await withShardArms(db, lookIn);
  if (!hit && by === "worker" && marked) throw new Error("The project's ledger is indexing a backlog that may hold this append, and could not be asked");
  if (!hit) return null;
  // A commit's rows are all in the arm that holds its name.
  return shapeRows(armDb(db, arm), {
    sql: `SELECT ${SHAPE_SELECT} FROM ${rowsBySeq({ project: "?1", lo: "?2", hi: "?3" })} e`,
    params: [projectId, hit.first, hit.last],
  });
}

/** The daily cron's sweep of a shard's names given up long enough ago that no batch naming them can still be in flight. */
export async function dropStaleGivenUpAppends(db: D1Database, now: Date): Promise<void> {
  await db.prepare("DELETE FROM given_up_appends WHERE given_up_at < ?").bind(new Date(now.getTime() - GIVEN_UP_KEPT_MS).toISOString()).run();
}

/** What the database says when a commit names a given-up append (migrations/0034_given_up_appends.sql). */
export function isGivenUpRefusal(error: unknown): boolean {
  return String((error as Error | null)?.message ?? error).includes("names an append its worker gave up on");
}

/**
 * Which of these append names were given up: a commit that names one of them
 * is refused whole, so the ledger commits the others again without them.
 * One bound value whatever their number (D1 allows 100).
 */
export async function givenUpAmong(db: D1Database, tokens: readonly string[]): Promise<Set<string>> {
  if (tokens.length === 0) return new Set();
  const { results } = await db
    .prepare("SELECT g.token FROM json_each(?) j JOIN given_up_appends g ON g.token = j.value")
    .bind(JSON.stringify(tokens))
    .all<{ token: string }>();
  return new Set(results.map((r) => r.token));
}
