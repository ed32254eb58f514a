-- Job limits and owners (issue 33), event shards. created_by: the prefix of the
-- API key that created the job through POST /v1/jobs; created_by_scope: the
-- strongest scope that key held then (read or admin). Canceling or deleting a
-- job needs that scope or that key. NULL on jobs made before this migration
-- (and on erasures' jobs, which the ledger makes and nobody cancels): those need
-- admin, since nothing says an admin's evidence export is not among them.
-- jobs_live_idx: the live (queued or running) jobs of a project, which POST
-- /v1/jobs counts against JOB_MAX_RUNNING and looks through for a verify of the
-- same range, in the statement that inserts the new job. jobs_live_updated_idx:
-- the live jobs by when their record last moved, which the cron looks through
-- every minute for a job whose Workflow instance was lost. Both hold only live
-- jobs, a handful per project, whatever the history.
ALTER TABLE `jobs` ADD `created_by` text;
--> statement-breakpoint
ALTER TABLE `jobs` ADD `created_by_scope` text;
--> statement-breakpoint
CREATE INDEX `jobs_live_idx` ON `jobs` (`project_id`,`type`) WHERE `status` IN ('queued', 'running');
--> statement-breakpoint
CREATE INDEX `jobs_live_updated_idx` ON `jobs` (`updated_at`) WHERE `status` IN ('queued', 'running');
