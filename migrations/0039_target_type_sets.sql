-- An application names few types of target, so a batch's events mostly share their first target's type
-- (and their second's), and a batch of 100 wrote 100 entries of one type into events_first_target_type_idx:
-- a billed row each at ingest. Now a commit writes one target_type_sets row for each place (0: first
-- target, 1: second) and type that three or more of its rows share (the seq range from the first of them
-- to the last, how many rows it holds and, unless it holds every row of the range, their offsets from the
-- first), and those rows no entry in that place's type index (bit 1 << place of type_sets); a filter on a
-- target type reads them by seq (src/model/target-type-sets.ts). A type a batch names once or twice keeps
-- its entries, as every row written before this does (type_sets = 0).
-- The two indexes are rebuilt over a shard's rows in one statement each, as 0038 rebuilt two.
ALTER TABLE `events` ADD `type_sets` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
CREATE TABLE `target_type_sets` (
	`project_id` text NOT NULL,
	`at` integer NOT NULL,
	`type` text NOT NULL,
	`last_seq` integer NOT NULL,
	`first_seq` integer NOT NULL,
	`members` integer NOT NULL,
	`seqs` text,
	PRIMARY KEY(`project_id`, `at`, `type`, `last_seq`)
) WITHOUT ROWID;
--> statement-breakpoint
DROP INDEX `events_first_target_type_idx`;
--> statement-breakpoint
CREATE INDEX `events_first_target_type_idx` ON `events` (`project_id`, (targets ->> '$[0].type'), `occurred_at`, `seq`) WHERE targets <> '[]' AND (type_sets & 1) = 0;
--> statement-breakpoint
DROP INDEX `events_second_target_type_idx`;
--> statement-breakpoint
CREATE INDEX `events_second_target_type_idx` ON `events` (`project_id`, (targets ->> '$[1].type'), `occurred_at`, `seq`) WHERE json_array_length(targets) > 1 AND (type_sets & 2) = 0;
--> statement-breakpoint
-- A set goes with the last of its rows (archive, retention, shard moves; erasure never changes targets).
-- A set spans fewer than 1,024 seqs (src/model/target-type-sets.ts), so the sets that hold a row end
-- within 1,023 seqs after it: a bounded seek, then a probe of the seq index that stops at the first of
-- its rows left. Hand-written: drizzle-kit does not model triggers.
CREATE TRIGGER `target_type_sets_after_delete` AFTER DELETE ON `events` WHEN old.type_sets <> 0 BEGIN
	DELETE FROM target_type_sets WHERE (old.type_sets & 1) <> 0 AND project_id = old.project_id AND at = 0 AND type = (old.targets ->> '$[0].type')
		AND last_seq BETWEEN old.seq AND old.seq + 1023 AND first_seq <= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.project_id = old.project_id AND e.seq BETWEEN target_type_sets.first_seq AND target_type_sets.last_seq
			AND (e.type_sets & 1) <> 0 AND (e.targets ->> '$[0].type') = target_type_sets.type);
	DELETE FROM target_type_sets WHERE (old.type_sets & 2) <> 0 AND project_id = old.project_id AND at = 1 AND type = (old.targets ->> '$[1].type')
		AND last_seq BETWEEN old.seq AND old.seq + 1023 AND first_seq <= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.project_id = old.project_id AND e.seq BETWEEN target_type_sets.first_seq AND target_type_sets.last_seq
			AND (e.type_sets & 2) <> 0 AND (e.targets ->> '$[1].type') = target_type_sets.type);
END;
