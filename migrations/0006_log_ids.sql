-- Each project's public transparency log is addressed by log_id: 128 random bits,
-- URL-safe, never the project id (which may name a customer). Existing projects get
-- one here; new ones get one at creation (src/storage/projects.ts, src/scripts/lib.mjs).
ALTER TABLE `projects` ADD `log_id` text;--> statement-breakpoint
UPDATE `projects` SET `log_id` = lower(hex(randomblob(16))) WHERE `log_id` IS NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `projects_log_id_idx` ON `projects` (`log_id`);
