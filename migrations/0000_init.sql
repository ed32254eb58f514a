CREATE TABLE `api_keys` (
	`prefix` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`secret_hash` text NOT NULL,
	`created_at` text NOT NULL,
	`revoked_at` text,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `api_keys_project_idx` ON `api_keys` (`project_id`);--> statement-breakpoint
CREATE TABLE `events` (
	`row_id` integer PRIMARY KEY NOT NULL,
	`id` text NOT NULL,
	`project_id` text NOT NULL,
	`seq` integer NOT NULL,
	`action` text NOT NULL,
	`organization` text,
	`actor_id` text,
	`actor_type` text,
	`actor_name` text,
	`actor_email` text,
	`targets` text NOT NULL,
	`metadata` text NOT NULL,
	`occurred_at` text NOT NULL,
	`received_at` text NOT NULL,
	`ip_address` text,
	`user_agent` text,
	`pii_salt` text,
	`pii_commitment` text NOT NULL,
	`hash` text NOT NULL,
	`prev_hash` text,
	`signature` text,
	`anonymized_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `events_id_unique` ON `events` (`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `events_project_seq_idx` ON `events` (`project_id`,`seq`);--> statement-breakpoint
CREATE INDEX `events_project_time_idx` ON `events` (`project_id`,`occurred_at`,`seq`);--> statement-breakpoint
CREATE INDEX `events_org_time_idx` ON `events` (`project_id`,`organization`,`occurred_at`,`seq`);--> statement-breakpoint
CREATE INDEX `events_actor_time_idx` ON `events` (`project_id`,`actor_id`,`occurred_at`,`seq`);--> statement-breakpoint
CREATE INDEX `events_action_time_idx` ON `events` (`project_id`,`action`,`occurred_at`,`seq`);--> statement-breakpoint
CREATE INDEX `events_ip_time_idx` ON `events` (`project_id`,`ip_address`,`occurred_at`,`seq`);--> statement-breakpoint
CREATE TABLE `idempotency_keys` (
	`project_id` text NOT NULL,
	`key` text NOT NULL,
	`event_ids` text NOT NULL,
	`created_at` text NOT NULL,
	PRIMARY KEY(`project_id`, `key`)
);
--> statement-breakpoint
CREATE INDEX `idempotency_created_idx` ON `idempotency_keys` (`created_at`);--> statement-breakpoint
CREATE TABLE `projects` (
	`id` text PRIMARY KEY NOT NULL,
	`created_at` text NOT NULL,
	`head_seq` integer DEFAULT 0 NOT NULL,
	`head_hash` text
);
--> statement-breakpoint
CREATE TABLE `retention_gaps` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`project_id` text NOT NULL,
	`before_hash` text,
	`last_hash` text NOT NULL,
	`first_seq` integer NOT NULL,
	`last_seq` integer NOT NULL,
	`purged_count` integer NOT NULL,
	`purged_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `retention_gaps_project_idx` ON `retention_gaps` (`project_id`,`last_hash`);--> statement-breakpoint
CREATE TABLE `retention_rules` (
	`project_id` text NOT NULL,
	`pattern` text NOT NULL,
	`days` integer NOT NULL,
	PRIMARY KEY(`project_id`, `pattern`)
);
