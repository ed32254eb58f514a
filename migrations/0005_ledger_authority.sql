-- The ledger's own storage is now the authority for the chain head, the retention
-- plan and erasure records; D1 keeps only copies for queries.
-- The head copy is no longer written: drop it so nobody reads a stale value.
ALTER TABLE `projects` DROP COLUMN `head_seq`;--> statement-breakpoint
ALTER TABLE `projects` DROP COLUMN `head_hash`;--> statement-breakpoint
-- Which rules (pattern, days, cutoff) a purge applied; covered by the gap's signature.
ALTER TABLE `retention_gaps` ADD `rules` text;--> statement-breakpoint
-- The body hash of an idempotent request: the same key with another body is refused.
ALTER TABLE `idempotency_keys` ADD `request_hash` text;
