-- Periods, the readers' half (issue 38, storage v2; src/model/periods.ts). A period is a copy of the tables an
-- event's rows live in (events, its search index, targets, spans, runs and sets), named with the period's
-- suffix (events_p2950), made from the main tables' schema; once all it holds is archived, its tables are
-- dropped, which D1 bills nothing for, where deleting the rows bills one a row. This is the shard's list of its
-- periods: every read of a project's hot rows reads the main tables and each period named here (its arms).
-- A period is named here in the batch that makes its tables and leaves in the batch that drops them. Until a
-- writer makes one, the list is empty and every read reads the main tables alone, as before. sealing_at: since
-- when the archive seals the period's rows whatever their projects' windows, so that it can be dropped.
CREATE TABLE `periods` (
	`n` integer PRIMARY KEY NOT NULL,
	`made_at` text NOT NULL,
	`sealing_at` text
);
