-- Archived ids without a row each (issue 38, storage v2). New event ids carry
-- their received_at millisecond and a 32-bit tag of their project
-- (src/model/event-id.ts). A segment whose every id does records the tag
-- (id_tag) and writes no archive_ids rows: a lookup by id reads the one
-- segment whose receive range holds the id's time, found through these two
-- indexes (by project for a project's own reads, by tag for a public receipt,
-- which knows no project). One index row per segment of 2,000 events instead
-- of two billed rows and ~135 bytes per archived event. first_id names a
-- segment in an archive_damaged failure, which archive_ids did before.
-- Segments sealed before keep their archive_ids rows (id_tag NULL).
ALTER TABLE `archive_segments` ADD `id_tag` integer;
--> statement-breakpoint
ALTER TABLE `archive_segments` ADD `first_id` text;
--> statement-breakpoint
CREATE INDEX `archive_segments_received_idx` ON `archive_segments` (`project_id`, `last_received_at`);
--> statement-breakpoint
CREATE INDEX `archive_segments_tag_idx` ON `archive_segments` (`id_tag`, `last_received_at`) WHERE `id_tag` IS NOT NULL;
