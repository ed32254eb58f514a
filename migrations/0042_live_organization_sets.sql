-- A batch of one tenant's events, or of a bulk operation, names one organization again and again, and each such
-- event wrote an entry into events_org_time_idx: a billed row each at ingest. Now a commit writes one
-- organization_sets row for each organization that three or more of its live rows share (time_in_span, 0040:
-- they share the instant the commit stamped), as 0041 does for actions: the instant, the seq of the first of them,
-- the last, and their seqs as offsets from the first. Those rows are marked org_in_set = 1 and take no entry in the
-- rebuilt organization index. Keyed (project, organization, received_at, first_seq), an organization's sets are in
-- list order, and a filter on it merges the index's entries with its sets (src/model/live-sets.ts,
-- src/model/event-query.ts). Every row written before this keeps its entry (org_in_set = 0), as do rows with their
-- own occurred_at and those of shard copies and restores. The index is rebuilt over a shard's rows in one
-- statement, as 0038-0041 rebuilt theirs.
ALTER TABLE `events` ADD `org_in_set` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
CREATE TABLE `organization_sets` (
	`project_id` text NOT NULL,
	`organization` text NOT NULL,
	`received_at` text NOT NULL,
	`first_seq` integer NOT NULL,
	`last_seq` integer NOT NULL,
	`seqs` text NOT NULL,
	PRIMARY KEY(`project_id`, `organization`, `received_at`, `first_seq`)
) WITHOUT ROWID;
--> statement-breakpoint
DROP INDEX `events_org_time_idx`;
--> statement-breakpoint
CREATE INDEX `events_org_time_idx` ON `events` (`project_id`, `organization`, `occurred_at`, `seq`) WHERE `organization` IS NOT NULL AND `org_in_set` = 0;
--> statement-breakpoint
-- A set goes with the last of its rows (archive, retention, shard moves; erasure never changes an organization).
-- Its rows share its organization and instant, and it spans fewer than 1,024 seqs (src/model/live-sets.ts): a
-- bounded seek, then a walk of its seq range (each row read for its mark and organization) that stops at the first
-- of its rows left. Hand-written: drizzle-kit does not model triggers.
CREATE TRIGGER `organization_sets_after_delete` AFTER DELETE ON `events` WHEN old.org_in_set = 1 BEGIN
	DELETE FROM organization_sets WHERE project_id = old.project_id AND organization = old.organization AND received_at = old.received_at
		AND first_seq BETWEEN old.seq - 1023 AND old.seq AND last_seq >= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.project_id = old.project_id AND e.seq BETWEEN organization_sets.first_seq AND organization_sets.last_seq
			AND e.org_in_set = 1 AND e.organization = organization_sets.organization);
END;
