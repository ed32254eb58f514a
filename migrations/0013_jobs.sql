-- Jobs (issue 21), event shards: long work (exports, verifies) run as Cloudflare
-- Workflows, one instance per job, named by the job's id. The record lives with
-- the project's events (its shard), so a job's steps read and record in one place.
-- params: the job's request, JSON. state: where the walk stands after the last
-- recorded part (JSON), what a step retried after a crash starts from again.
-- files: the parts written so far, JSON [{name, bytes, rows, sha256}], in order.
-- files_expire_at: when a finished job's files are deleted by the daily sweep;
-- files_expired 1 once they are.
CREATE TABLE `jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`type` text NOT NULL,
	`status` text NOT NULL,
	`params` text NOT NULL,
	`progress_done` integer DEFAULT 0 NOT NULL,
	`progress_total` integer DEFAULT 0 NOT NULL,
	`state` text,
	`files` text DEFAULT '[]' NOT NULL,
	`result` text,
	`error` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`files_expire_at` text,
	`files_expired` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `jobs_project_created_idx` ON `jobs` (`project_id`,`created_at`,`id`);
--> statement-breakpoint
CREATE INDEX `jobs_files_expire_idx` ON `jobs` (`files_expire_at`) WHERE `files_expired` = 0;
