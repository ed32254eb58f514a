-- One search index entry per group of up to 16 events of a commit instead of one per
-- event (issue 38, storage v2). D1 bills every FTS5 insert and delete as a row written
-- whatever its text (measured: 100 entries, 100 rows), so a per-event entry cost two
-- rows over an event's life (its insert, and its delete at archive). A commit now
-- writes one entry per 16 of its events, holding all their words, and each event
-- keeps its own words (search_words, the same words without the project's tag) so
-- that a search checks in SQL which events of a matching group hold every term
-- (src/model/event-query.ts). An event's entry is the rowid row_id - search_lead:
-- a commit's rows are numbered consecutively in its one transaction, and the group's
-- first event has lead 0. Every other writer (shard copies, restores, older code)
-- leaves lead 0 and search_words NULL: its rows keep an entry each, exact as before,
-- so existing rows need no job.
ALTER TABLE `events` ADD `search_lead` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
ALTER TABLE `events` ADD `search_words` text;
--> statement-breakpoint
DROP TRIGGER `events_search_after_delete`;
--> statement-breakpoint
-- A group's entry goes with the last of its events: retention purges by rule and
-- legal hold, so a group's events need not go together. The probe reads at most the
-- group's 16 rows (rows read, not written).
CREATE TRIGGER `events_search_after_delete` AFTER DELETE ON `events` BEGIN
	DELETE FROM events_search WHERE rowid = old.row_id - old.search_lead
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.row_id BETWEEN old.row_id - old.search_lead AND old.row_id - old.search_lead + 15
			AND e.row_id - e.search_lead = old.row_id - old.search_lead);
END;
--> statement-breakpoint
DROP TRIGGER `events_search_after_update`;
--> statement-breakpoint
-- A changed row (an erasure) takes its group's entry out at once, so erased words are
-- never matched; the eraser then makes the group's entry again from the rows' stored
-- words, the scrubbed ones included (groupReindexStatement).
CREATE TRIGGER `events_search_after_update` AFTER UPDATE OF action, actor_name, actor_email, actor_id, search_words ON `events` BEGIN
	DELETE FROM events_search WHERE rowid = old.row_id - old.search_lead;
END;
