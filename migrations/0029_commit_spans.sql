-- Hot events found by id without an index row each (issue 38, storage v2).
-- A new event's id carries its received_at millisecond (src/model/event-id.ts),
-- and every event of one commit shares that received_at. So the commit writes
-- one commit_spans row (its received_at and seq range) instead of one
-- events_id_unique entry per event, and a lookup reads the span of the id's
-- millisecond and then the (project_id, seq) index over that range
-- (src/model/event-lookup.ts): one billed row per commit instead of one per
-- event.
--
-- Rows keep id_indexed = 1 (the default, so every writer that does not name
-- the column, shard copies and older code included) and their entry in the
-- id index, now partial; only the commit writes 0 with a span. The partial
-- index is built over a shard's existing rows in one statement: 3.6 s for
-- 2.47M events (a 3.5 GB file) on this machine, so a full 10 GB shard stays
-- well inside D1's 30 s. Dropping the old index took 0.1-0.6 s.
ALTER TABLE `events` ADD `id_indexed` integer DEFAULT 1 NOT NULL;
--> statement-breakpoint
CREATE TABLE `commit_spans` (
	`received_at` text NOT NULL,
	`project_id` text NOT NULL,
	`first_seq` integer NOT NULL,
	`last_seq` integer NOT NULL,
	PRIMARY KEY (`received_at`, `project_id`, `first_seq`)
) WITHOUT ROWID;
--> statement-breakpoint
-- A span goes with the last of its events: retention purges by rule and legal
-- hold, so a commit's events need not go in seq order, and a span stays while
-- any event of its range is left (one probe of the seq index per deleted
-- event, rows read, not written). Hand-written: drizzle-kit does not model triggers.
CREATE TRIGGER `commit_spans_after_delete` AFTER DELETE ON `events` WHEN old.id_indexed = 0 BEGIN
	DELETE FROM commit_spans WHERE received_at = old.received_at AND project_id = old.project_id
		AND first_seq <= old.seq AND last_seq >= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.project_id = old.project_id AND e.seq BETWEEN commit_spans.first_seq AND commit_spans.last_seq);
END;
--> statement-breakpoint
CREATE UNIQUE INDEX `events_legacy_id_unique` ON `events` (`id`) WHERE `id_indexed` = 1;
--> statement-breakpoint
DROP INDEX `events_id_unique`;
