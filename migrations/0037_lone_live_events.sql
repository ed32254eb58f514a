-- A commit of one live event (no occurred_at sent: it happened when it was received) kept an id index
-- entry (0036), a billed row at ingest. Its id already names it: the id carries received_at to the
-- millisecond, which for a live event is its occurred_at, and the project's time index
-- (project_id, occurred_at, seq) holds it at that instant. So such a row takes no entry (id_indexed = 2)
-- and is found there (src/model/event-lookup.ts). A public receipt names no project: the id's project
-- tag (its last 32 bits) names the shard's projects to look in, from this table, one row per project
-- and tag that has such rows, written by the commit (a row already there costs no write).
CREATE TABLE `project_tags` (
	`tag` integer NOT NULL,
	`project_id` text NOT NULL,
	PRIMARY KEY(`tag`, `project_id`)
) WITHOUT ROWID;
