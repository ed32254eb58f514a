-- History reads (issue 22): GET /v1/events merges the archived segments whose occurred_at
-- range reaches into a page (src/reads/history-read.ts), newest first: an index on the
-- segment's latest occurred_at finds them without reading the project's every segment row.
CREATE INDEX `archive_segments_occurred_idx` ON `archive_segments` (`project_id`, `last_occurred_at`);
