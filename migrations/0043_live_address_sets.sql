-- A filter on an address walked a commit's live rows badly: their address runs (0038) are keyed by seq, so
-- a list by an address read every row of its runs and sorted them, or, when the address was common, walked
-- the whole time order checking each row (read through its live span, 0040: its time index entry is gone).
-- Now a commit's live rows (time_in_span, 0040) that share an address, three or more, are one address_sets
-- row, as 0041 and 0042 do for actions and organizations: the instant, the seq of the first of them, the
-- last, and their seqs as offsets from the first. Keyed (project, address, instant, first seq), an address's
-- sets are in list order, and a filter on it merges the index's entries with its sets and its runs
-- (src/model/live-sets.ts, src/model/event-query.ts). Such rows are marked ip_run = 2: the index already
-- leaves out every row with ip_run <> 0, so unlike 0038-0042 nothing is rebuilt, and this migration is
-- instant on any shard. It costs no row more: a set takes the run's place, a row at ingest and its delete
-- at archive. Rows of runs (ip_run = 1: written before this, shard copies, restores, rows with their own
-- occurred_at) keep them.
CREATE TABLE `address_sets` (
	`project_id` text NOT NULL,
	`ip_address` text NOT NULL,
	`received_at` text NOT NULL,
	`first_seq` integer NOT NULL,
	`last_seq` integer NOT NULL,
	`seqs` text NOT NULL,
	PRIMARY KEY(`project_id`, `ip_address`, `received_at`, `first_seq`)
) WITHOUT ROWID;
--> statement-breakpoint
-- A set goes with the last of its rows that still holds its address: deleted (archive, retention, shard
-- moves) or scrubbed (erasure sets ip_address NULL), so no address stays in D1 once no event holds it, as
-- 0038's triggers do for runs. Its rows share its address and instant, and it spans fewer than 1,024 seqs
-- (src/model/live-sets.ts): a bounded seek, then a walk of its seq range that stops at the first of its rows
-- left. Hand-written: drizzle-kit does not model triggers.
CREATE TRIGGER `address_sets_after_delete` AFTER DELETE ON `events` WHEN old.ip_run = 2 BEGIN
	DELETE FROM address_sets WHERE project_id = old.project_id AND ip_address = old.ip_address AND received_at = old.received_at
		AND first_seq BETWEEN old.seq - 1023 AND old.seq AND last_seq >= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.project_id = old.project_id AND e.seq BETWEEN address_sets.first_seq AND address_sets.last_seq
			AND e.ip_run = 2 AND e.ip_address = address_sets.ip_address);
END;
--> statement-breakpoint
CREATE TRIGGER `address_sets_after_scrub` AFTER UPDATE OF ip_address ON `events` WHEN old.ip_run = 2 AND new.ip_address IS NOT old.ip_address BEGIN
	DELETE FROM address_sets WHERE project_id = old.project_id AND ip_address = old.ip_address AND received_at = old.received_at
		AND first_seq BETWEEN old.seq - 1023 AND old.seq AND last_seq >= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.project_id = old.project_id AND e.seq BETWEEN address_sets.first_seq AND address_sets.last_seq
			AND e.ip_run = 2 AND e.ip_address = address_sets.ip_address);
END;
