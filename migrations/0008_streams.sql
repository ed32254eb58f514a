-- Log streams (control database): one row per destination. The destination's
-- credential (webhook signing secret, Splunk HEC token, Datadog API key) is kept
-- only as AES-GCM ciphertext under STREAM_SECRETS_KEY. The cursor, retries and
-- live status are kept by the stream's Durable Object (StreamDelivery); status
-- here is its copy, so listing streams and waking them need no object.
CREATE TABLE `streams` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`type` text NOT NULL,
	`url` text NOT NULL,
	`credential` text NOT NULL,
	`filter` text NOT NULL,
	`status` text DEFAULT 'active' NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `streams_project_idx` ON `streams` (`project_id`,`status`);
