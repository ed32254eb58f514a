-- Pre-rendered exports of each archived segment (issue 14, export speed). At
-- seal time the archiver also writes the segment's rows rendered as the
-- export writes them (CSV lines, JSON elements), newest first, gzip-compressed,
-- next to the segment object. Their SHA-256 and byte sizes live here so an
-- export serves a companion only while it matches its index row. NULL on
-- segments sealed before this migration: those take the row path.
ALTER TABLE `archive_segments` ADD `csv_sha256` text;
--> statement-breakpoint
ALTER TABLE `archive_segments` ADD `csv_bytes` integer;
--> statement-breakpoint
ALTER TABLE `archive_segments` ADD `json_sha256` text;
--> statement-breakpoint
ALTER TABLE `archive_segments` ADD `json_bytes` integer;
