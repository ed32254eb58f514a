-- Shards that never fill (issue 22), control database: one row per event shard,
-- written whenever the service measures the shard's size (D1 reports it after
-- every query: the daily cron, each ledger's archive check, placing a project).
-- high_water_bytes: this shard's own mark, NULL for the deployment's
-- SHARD_HIGH_WATER_BYTES; past it, the shard's largest projects archive more
-- until it is back under. Every database gets the same migrations; only the
-- control database's table is used.
CREATE TABLE `shards` (
	`shard` integer PRIMARY KEY NOT NULL,
	`size_bytes` integer,
	`measured_at` text,
	`high_water_bytes` integer
);
