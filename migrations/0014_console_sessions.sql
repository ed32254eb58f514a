-- Console sign-in sessions (issue 24), control database. A session is named by
-- the SHA-256 of a random secret only the browser's cookie holds; the API key it
-- was opened with is kept here sealed (AES-GCM) under a key derived from that
-- same secret, so neither a copy of this table nor a forged cookie yields it.
-- Signing out deletes the row: the cookie is then worth nothing, replayed or not.
CREATE TABLE `console_sessions` (
	`id_hash` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`key_prefix` text NOT NULL,
	`sealed_key` text NOT NULL,
	`csrf_token` text NOT NULL,
	`created_at` text NOT NULL,
	`expires_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `console_sessions_expires_idx` ON `console_sessions` (`expires_at`);
