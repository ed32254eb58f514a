-- Cold archive (issue 14). projects.hot_days (control database): how many days
-- of events a project keeps in D1; NULL keeps everything hot. archive_segments
-- (event shards): one row per sealed R2 segment of a project, a contiguous seq
-- range; written in the same transaction that deletes the segment's hot rows.
ALTER TABLE `projects` ADD `hot_days` integer;
--> statement-breakpoint
CREATE TABLE `archive_segments` (
	`project_id` text NOT NULL,
	`first_seq` integer NOT NULL,
	`last_seq` integer NOT NULL,
	`first_received_at` text NOT NULL,
	`last_received_at` text NOT NULL,
	`first_occurred_at` text NOT NULL,
	`last_occurred_at` text NOT NULL,
	`count` integer NOT NULL,
	`bytes` integer NOT NULL,
	`sha256` text NOT NULL,
	`object_key` text NOT NULL,
	`created_at` text NOT NULL,
	PRIMARY KEY (`project_id`, `first_seq`)
);
--> statement-breakpoint
CREATE INDEX `archive_segments_last_seq_idx` ON `archive_segments` (`project_id`, `last_seq`);
