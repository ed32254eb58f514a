-- Scoped API keys (issue 23), control database. scopes: a comma-separated
-- subset of ingest, read, admin; keys made before scopes existed could do
-- everything, so they become admin. label: the operator's or admin's note.
-- expires_at: NULL never. created_by: the prefix of the admin key that made
-- it through POST /v1/keys, or NULL when an operator script made it.
-- audit_state: which of its lifecycle events (created, revoked) the project's
-- chain holds; NULL for none yet. Keys made by a script (which writes here
-- directly) get theirs from the daily sweep.
ALTER TABLE `api_keys` ADD `scopes` text DEFAULT 'admin' NOT NULL;
--> statement-breakpoint
ALTER TABLE `api_keys` ADD `label` text;
--> statement-breakpoint
ALTER TABLE `api_keys` ADD `expires_at` text;
--> statement-breakpoint
ALTER TABLE `api_keys` ADD `created_by` text;
--> statement-breakpoint
ALTER TABLE `api_keys` ADD `audit_state` text;
