-- The search index, scoped per project (issue 12, item 6). One FTS5 index over all
-- projects let one project's common terms make every project's search read their
-- doclists. Every indexed word now carries its project's tag and a search asks
-- only for its own tag (src/reads/search-index.ts). The text (tag + words) is made
-- in JavaScript, so the table is contentless and the application inserts the
-- entries with the events; deletes stay in triggers. Hand-written: drizzle-kit does
-- not model virtual tables. Existing rows get their entries from the daily cron
-- (reindexBacklog, using search_backlog below).
DROP TRIGGER IF EXISTS `events_fts_after_insert`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `events_fts_after_update`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `events_fts_after_delete`;
--> statement-breakpoint
DROP TABLE IF EXISTS `events_fts`;
--> statement-breakpoint
-- ascii splits only at the spaces between the words the application wrote. Prefix
-- indexes: tag (6) plus 2 and 3 characters, the shortest terms. detail=none would
-- make the index a third of the size but measured 2-4x slower on common full-word
-- prefixes at 1M events, so positions stay (default detail=full).
CREATE VIRTUAL TABLE `events_search` USING fts5(
	words, content='', contentless_delete=1, tokenize='ascii', prefix='8 9'
);
--> statement-breakpoint
CREATE TRIGGER `events_search_after_delete` AFTER DELETE ON `events` BEGIN
	DELETE FROM events_search WHERE rowid = old.row_id;
END;
--> statement-breakpoint
-- A changed row (an erasure) leaves the index at once, so erased words are never
-- matched; the eraser then indexes the scrubbed values (reindexStatements).
CREATE TRIGGER `events_search_after_update` AFTER UPDATE OF action, actor_name, actor_email, actor_id ON `events` BEGIN
	DELETE FROM events_search WHERE rowid = old.row_id;
END;
--> statement-breakpoint
-- Rows [next_row_id, last_row_id] may lack an entry. last_row_id NULL: fixed at the
-- cron's first run; 0 when there were no events (a new deployment: nothing to do).
CREATE TABLE `search_backlog` (
	`id` integer PRIMARY KEY NOT NULL CHECK (`id` = 1),
	`next_row_id` integer NOT NULL,
	`last_row_id` integer
);
--> statement-breakpoint
INSERT INTO `search_backlog` (`id`, `next_row_id`, `last_row_id`)
	SELECT 1, 1, CASE WHEN EXISTS (SELECT 1 FROM `events`) THEN NULL ELSE 0 END;
