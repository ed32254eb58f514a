-- The action catalog (issue 35), event shards. changes: the event's
-- before/after values as canonical JSON text, NULL when it sent none.
-- schema_version: the catalog schema version the event was checked against
-- at ingest, NULL when its project validates nothing (mode off) or the action
-- has no schema; schema_valid: 1 when it passed, 0 when it broke that version
-- and was stored anyway (mode warn). All three are inside the event's hash
-- when present, so rows stored before this migration hash exactly as before.
-- No new index: a column costs no row written per event.
ALTER TABLE `events` ADD `changes` text;
--> statement-breakpoint
ALTER TABLE `events` ADD `schema_version` integer;
--> statement-breakpoint
ALTER TABLE `events` ADD `schema_valid` integer;
