-- A live event (no occurred_at sent) happened when its commit received it, and a commit stamps one
-- received_at on all its events, so a commit's live events share one instant and sit together in the
-- time index: a batch of 100 wrote 100 entries at one instant, a billed row each at ingest. Now a commit
-- of two events or more (it writes a commit_spans row, 0029) marks its live rows time_in_span = 1 and
-- its span live = 1, and those rows take no entry in the time index: a list in time order walks the
-- index and, merged with it, the project's live spans newest first and each span's rows by seq
-- (src/model/event-query.ts, timeWalk). Shard copies and archive restores mark nothing (their spans
-- may overlap), nor does every row written before this (time_in_span = 0).
-- The time index is rebuilt over a shard's rows in one statement, as 0038 and 0039 rebuilt theirs.
ALTER TABLE `events` ADD `time_in_span` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
ALTER TABLE `commit_spans` ADD `live` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
CREATE UNIQUE INDEX `commit_spans_live_time_idx` ON `commit_spans` (`project_id`, `received_at`, `first_seq`) WHERE `live` = 1;
--> statement-breakpoint
DROP INDEX `events_project_time_idx`;
--> statement-breakpoint
CREATE INDEX `events_project_time_idx` ON `events` (`project_id`, `occurred_at`, `seq`, `ip_address`) WHERE `time_in_span` = 0;
