ALTER TABLE `retention_gaps` ADD `signature` text;--> statement-breakpoint
CREATE UNIQUE INDEX `retention_gaps_first_seq_idx` ON `retention_gaps` (`project_id`,`first_seq`);--> statement-breakpoint
CREATE INDEX `retention_gaps_last_seq_idx` ON `retention_gaps` (`project_id`,`last_seq`);