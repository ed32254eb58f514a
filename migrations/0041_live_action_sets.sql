-- An application sends a few dozen actions, so a batch's events mostly repeat a handful of them, and a
-- batch of 100 wrote 100 entries into events_action_time_idx: a billed row each at ingest. Now a commit
-- writes one action_sets row for each action that three or more of its live rows share (time_in_span,
-- 0040: they share the instant the commit stamped): the instant, the seq of the first of them, the last,
-- and their seqs as offsets from the first. Those rows are marked action_in_set = 1 and take no entry in
-- the rebuilt action index. Keyed (project, action, received_at, first_seq), an action's sets are in list
-- order, and a filter on the action merges the index's entries with its sets, each set's rows by seq
-- (src/model/action-sets.ts, src/model/event-query.ts). Every row written before this keeps its entry
-- (action_in_set = 0), as do rows with their own occurred_at and those of shard copies and restores.
-- The action index is rebuilt over a shard's rows in one statement, as 0038-0040 rebuilt theirs.
ALTER TABLE `events` ADD `action_in_set` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
CREATE TABLE `action_sets` (
	`project_id` text NOT NULL,
	`action` text NOT NULL,
	`received_at` text NOT NULL,
	`first_seq` integer NOT NULL,
	`last_seq` integer NOT NULL,
	`seqs` text NOT NULL,
	PRIMARY KEY(`project_id`, `action`, `received_at`, `first_seq`)
) WITHOUT ROWID;
--> statement-breakpoint
DROP INDEX `events_action_time_idx`;
--> statement-breakpoint
CREATE INDEX `events_action_time_idx` ON `events` (`project_id`, `action`, `occurred_at`, `seq`) WHERE `action_in_set` = 0;
--> statement-breakpoint
-- A set goes with the last of its rows (archive, retention, shard moves; erasure never changes an
-- action). Its rows share its action and instant, and it spans fewer than 1,024 seqs
-- (src/model/action-sets.ts): a bounded seek, then a walk of its seq range (each row read for its mark
-- and action) that stops at the first of its rows left. Hand-written: drizzle-kit does not model triggers.
CREATE TRIGGER `action_sets_after_delete` AFTER DELETE ON `events` WHEN old.action_in_set = 1 BEGIN
	DELETE FROM action_sets WHERE project_id = old.project_id AND action = old.action AND received_at = old.received_at
		AND first_seq BETWEEN old.seq - 1023 AND old.seq AND last_seq >= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.project_id = old.project_id AND e.seq BETWEEN action_sets.first_seq AND action_sets.last_seq
			AND e.action_in_set = 1 AND e.action = action_sets.action);
END;
