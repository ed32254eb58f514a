-- An event's ip_address is its ingest request's (the spec: filled by the server), so the events of one
-- request share it, and a batch of 100 wrote 100 entries of the same address into events_ip_time_idx:
-- a billed row each at ingest. Now a commit writes one ip_runs row for each run of three or more
-- consecutive rows of one address (its seq range) and those rows no entry (ip_run = 1); a filter on an
-- address reads its runs' ranges through the seq index (src/model/event-query.ts). A lone row, and
-- every row written before this, keeps its entry (ip_run = 0, the default). The two indexes below are
-- rebuilt over a shard's rows in one statement each, as 0030 rebuilt four: 0.52 and 0.57 s over 1M
-- events in Node's SQLite, so a few seconds on a full shard, well inside D1's 30 s.
ALTER TABLE `events` ADD `ip_run` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
CREATE TABLE `ip_runs` (
	`project_id` text NOT NULL,
	`ip` text NOT NULL,
	`last_seq` integer NOT NULL,
	`first_seq` integer NOT NULL,
	PRIMARY KEY(`project_id`, `ip`, `last_seq`)
) WITHOUT ROWID;
--> statement-breakpoint
-- A common address is walked along the time index, checking each row's address (src/model/event-query.ts):
-- with the address in the index's entries that check reads no table row, about ten times cheaper a row.
-- Bytes in an entry every event has already, no row more.
DROP INDEX `events_project_time_idx`;
--> statement-breakpoint
CREATE INDEX `events_project_time_idx` ON `events` (`project_id`, `occurred_at`, `seq`, `ip_address`);
--> statement-breakpoint
DROP INDEX `events_ip_time_idx`;
--> statement-breakpoint
CREATE INDEX `events_ip_time_idx` ON `events` (`project_id`, `ip_address`, `occurred_at`, `seq`) WHERE `ip_address` IS NOT NULL AND `ip_run` = 0;
--> statement-breakpoint
-- A run goes with the last of its rows that still holds its address: deleted (archive, retention, shard
-- moves) or scrubbed (erasure sets ip_address NULL), so no address stays in D1 once no event holds it.
-- A run holds at most 1,024 rows (MAX_RUN, src/model/address-runs.ts), so the runs that hold a row end
-- within 1,023 seqs after it: a bounded seek however many runs the address has (one, or two where a shard
-- copy ran again), then a probe of the seq index that stops at the first row left. Hand-written:
-- drizzle-kit does not model triggers.
CREATE TRIGGER `ip_runs_after_delete` AFTER DELETE ON `events` WHEN old.ip_run = 1 BEGIN
	DELETE FROM ip_runs WHERE project_id = old.project_id AND ip = old.ip_address
		AND last_seq BETWEEN old.seq AND old.seq + 1023 AND first_seq <= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.project_id = old.project_id AND e.seq BETWEEN ip_runs.first_seq AND ip_runs.last_seq AND e.ip_address = ip_runs.ip);
END;
--> statement-breakpoint
CREATE TRIGGER `ip_runs_after_scrub` AFTER UPDATE OF ip_address ON `events` WHEN old.ip_run = 1 AND new.ip_address IS NOT old.ip_address BEGIN
	DELETE FROM ip_runs WHERE project_id = old.project_id AND ip = old.ip_address
		AND last_seq BETWEEN old.seq AND old.seq + 1023 AND first_seq <= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.project_id = old.project_id AND e.seq BETWEEN ip_runs.first_seq AND ip_runs.last_seq AND e.ip_address = ip_runs.ip);
END;
