/**
 * How a project's rows are indexed on one shard: its events, those that keep
 * their own words, the search groups they form and the entries of those
 * groups the index holds (src/model/search-index.ts); and the rows not found
 * through a commit span (src/model/commit-spans.ts): an id index entry of
 * their own, or alone and live, at their id's instant (model/event-lookup.ts).
 */
export async function searchGroupsOf(db: D1Database, projectId: string) {
  const row = await db
    .prepare(
      "SELECT count(*) AS events, count(search_words) AS worded, count(DISTINCT row_id - search_lead) AS groups, " +
        "(SELECT count(*) FROM events_search s WHERE s.rowid IN (SELECT row_id - search_lead FROM events WHERE project_id = ?1)) AS entries, " +
        "sum(id_indexed <> 0) AS unspanned, " +
        // The group of the newest row, while it has no entry: a commit's rows go on in it until 16 fill it.
        "(SELECT count(*) FROM events n WHERE n.project_id = ?1 AND n.seq = (SELECT max(seq) FROM events WHERE project_id = ?1) " +
        "AND NOT EXISTS (SELECT 1 FROM events_search s WHERE s.rowid = n.row_id - n.search_lead)) AS open " +
        "FROM events WHERE project_id = ?1",
    )
    .bind(projectId)
    .first<{ events: number; worded: number; groups: number; entries: number; unspanned: number; open: number }>();
  return row!;
}
