-- The main tables' marks (issue 38, storage v2; src/model/periods.ts, armSpans). A project whose commits go to
-- periods holds few or no rows in the main tables, and a read that treats them as one more settled arm (their
-- span of the project read once, kept 30 s) skips them when the page lies elsewhere. That is sound only while
-- no commit of the project lands there: so every commit written to the main tables writes this row in its own
-- batch (INSERT OR IGNORE: after the first, nothing is written), and a read looks for it in the batch that
-- already looks for the backlog mark (src/storage/own-writes.ts), reading the main tables as growing when it is
-- there. One row a project that ever commits to the main tables, none an event. A project made before this
-- table has no row: its old rows there are read by their span, as a settled period's are.
CREATE TABLE `main_commits` (
	`project_id` text PRIMARY KEY NOT NULL
) WITHOUT ROWID;
