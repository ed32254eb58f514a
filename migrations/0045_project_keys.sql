-- Keyed row ids, the readers' half (issue 38, storage v2; src/model/row-keys.ts). A keyed project has every
-- row of its stay in a shard at row_id = n x 2^40 + seq, n its number in that shard, kept here, so that a read
-- by seq finds its rows by row_id and they need no entry in the seq index (a billed row each at ingest). A
-- project gets its number when it is placed in the shard (made, or moved in), before any row of it is
-- written there; projects made before keys keep the seq index (no row here). Until a writer makes a key, this
-- table is empty and every read takes the seq index, as before. A key is never removed or renumbered while
-- its rows are there: their row ids are made from it.
CREATE TABLE `project_keys` (
	`project_id` text PRIMARY KEY NOT NULL,
	`n` integer NOT NULL,
	CHECK (`n` BETWEEN 1 AND 8191)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE UNIQUE INDEX `project_keys_n_unique` ON `project_keys` (`n`);
