-- Archived event ids (issue 26). archive_ids (event shards): one row per
-- archived event, written in the transaction that seals its segment, so a
-- lookup by id alone (a public receipt) reads that project's one segment and
-- nothing of any other project's archive. As drizzle generates it from
-- src/db/schema.ts, plus WITHOUT ROWID (the key is the row; drizzle cannot
-- say so). Segments sealed before this migration have no entries until the
-- archiver indexes them from their objects (src/storage/archive-ids.ts).
CREATE TABLE `archive_ids` (
	`project_id` text NOT NULL,
	`seq` integer NOT NULL,
	`id` text NOT NULL,
	PRIMARY KEY(`project_id`, `seq`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE UNIQUE INDEX `archive_ids_id_idx` ON `archive_ids` (`id`);
