/**
 * How a project's rows are indexed on one shard: its events, those that keep
 * their own words, the search groups they form and the entries of those
 * groups the index holds (src/model/search-index.ts); and the rows that took
 * an id index entry instead of being found through a commit span
 * (src/model/commit-spans.ts).
 */
export async function searchGroupsOf(db: D1Database, projectId: string) {
  const row = await db
    .prepare(
      "SELECT count(*) AS events, count(search_words) AS worded, count(DISTINCT row_id - search_lead) AS groups, " +
        "(SELECT count(*) FROM events_search s WHERE s.rowid IN (SELECT row_id - search_lead FROM events WHERE project_id = ?1)) AS entries, " +
        "sum(id_indexed) AS id_indexed " +
        "FROM events WHERE project_id = ?1",
    )
    .bind(projectId)
    .first<{ events: number; worded: number; groups: number; entries: number; id_indexed: number }>();
  return row!;
}
