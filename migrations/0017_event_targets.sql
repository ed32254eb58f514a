-- Target filters (issue 22: target_type, target_id on list, search and export). An
-- event's targets are stored as one canonical JSON array (events.targets), which no
-- index reaches; this table holds one row per distinct target of an event, kept by
-- triggers so every writer (ingest, shard copies, archiving, retention) keeps it in
-- step without code of its own. Keyed by (project, type, id, occurred_at, seq), the
-- table itself walks one target newest first; one index walks one target type. No
-- rowid and no index by event: the delete trigger finds an event's rows by that key.
-- Hand-written: drizzle-kit does not model triggers.
CREATE TABLE `event_targets` (
	`project_id` text NOT NULL,
	`type` text NOT NULL,
	`id` text NOT NULL,
	`occurred_at` text NOT NULL,
	`seq` integer NOT NULL,
	`row_id` integer NOT NULL,
	PRIMARY KEY (`project_id`, `type`, `id`, `occurred_at`, `seq`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `event_targets_type_time_idx` ON `event_targets` (`project_id`, `type`, `occurred_at`, `seq`);
--> statement-breakpoint
CREATE TRIGGER `event_targets_after_insert` AFTER INSERT ON `events` BEGIN
	INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
		SELECT new.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), new.occurred_at, new.seq, new.row_id
		FROM json_each(new.targets) t;
END;
--> statement-breakpoint
CREATE TRIGGER `event_targets_after_delete` AFTER DELETE ON `events` BEGIN
	DELETE FROM event_targets WHERE project_id = old.project_id AND occurred_at = old.occurred_at AND seq = old.seq
		AND (type, id) IN (SELECT json_extract(t.value, '$.type'), json_extract(t.value, '$.id') FROM json_each(old.targets) t);
END;
--> statement-breakpoint
-- Events already stored, half a million rows of the primary key per statement: D1
-- stops a statement after 30 s, and a million rows took 9 to 19 s on this machine's
-- local engine (2 loaded cores). Twenty statements cover any shard (D1's 10 GB hold
-- about 8.7M events); those past its last row insert nothing.
INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
	SELECT e.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), e.occurred_at, e.seq, e.row_id
	FROM (SELECT * FROM events ORDER BY row_id LIMIT 500000 OFFSET 0) e, json_each(e.targets) t;
--> statement-breakpoint
INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
	SELECT e.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), e.occurred_at, e.seq, e.row_id
	FROM (SELECT * FROM events ORDER BY row_id LIMIT 500000 OFFSET 500000) e, json_each(e.targets) t;
--> statement-breakpoint
INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
	SELECT e.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), e.occurred_at, e.seq, e.row_id
	FROM (SELECT * FROM events ORDER BY row_id LIMIT 500000 OFFSET 1000000) e, json_each(e.targets) t;
--> statement-breakpoint
INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
	SELECT e.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), e.occurred_at, e.seq, e.row_id
	FROM (SELECT * FROM events ORDER BY row_id LIMIT 500000 OFFSET 1500000) e, json_each(e.targets) t;
--> statement-breakpoint
INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
	SELECT e.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), e.occurred_at, e.seq, e.row_id
	FROM (SELECT * FROM events ORDER BY row_id LIMIT 500000 OFFSET 2000000) e, json_each(e.targets) t;
--> statement-breakpoint
INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
	SELECT e.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), e.occurred_at, e.seq, e.row_id
	FROM (SELECT * FROM events ORDER BY row_id LIMIT 500000 OFFSET 2500000) e, json_each(e.targets) t;
--> statement-breakpoint
INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
	SELECT e.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), e.occurred_at, e.seq, e.row_id
	FROM (SELECT * FROM events ORDER BY row_id LIMIT 500000 OFFSET 3000000) e, json_each(e.targets) t;
--> statement-breakpoint
INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
	SELECT e.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), e.occurred_at, e.seq, e.row_id
	FROM (SELECT * FROM events ORDER BY row_id LIMIT 500000 OFFSET 3500000) e, json_each(e.targets) t;
--> statement-breakpoint
INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
	SELECT e.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), e.occurred_at, e.seq, e.row_id
	FROM (SELECT * FROM events ORDER BY row_id LIMIT 500000 OFFSET 4000000) e, json_each(e.targets) t;
--> statement-breakpoint
INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
	SELECT e.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), e.occurred_at, e.seq, e.row_id
	FROM (SELECT * FROM events ORDER BY row_id LIMIT 500000 OFFSET 4500000) e, json_each(e.targets) t;
--> statement-breakpoint
INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
	SELECT e.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), e.occurred_at, e.seq, e.row_id
	FROM (SELECT * FROM events ORDER BY row_id LIMIT 500000 OFFSET 5000000) e, json_each(e.targets) t;
--> statement-breakpoint
INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
	SELECT e.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), e.occurred_at, e.seq, e.row_id
	FROM (SELECT * FROM events ORDER BY row_id LIMIT 500000 OFFSET 5500000) e, json_each(e.targets) t;
--> statement-breakpoint
INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
	SELECT e.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), e.occurred_at, e.seq, e.row_id
	FROM (SELECT * FROM events ORDER BY row_id LIMIT 500000 OFFSET 6000000) e, json_each(e.targets) t;
--> statement-breakpoint
INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
	SELECT e.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), e.occurred_at, e.seq, e.row_id
	FROM (SELECT * FROM events ORDER BY row_id LIMIT 500000 OFFSET 6500000) e, json_each(e.targets) t;
--> statement-breakpoint
INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
	SELECT e.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), e.occurred_at, e.seq, e.row_id
	FROM (SELECT * FROM events ORDER BY row_id LIMIT 500000 OFFSET 7000000) e, json_each(e.targets) t;
--> statement-breakpoint
INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
	SELECT e.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), e.occurred_at, e.seq, e.row_id
	FROM (SELECT * FROM events ORDER BY row_id LIMIT 500000 OFFSET 7500000) e, json_each(e.targets) t;
--> statement-breakpoint
INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
	SELECT e.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), e.occurred_at, e.seq, e.row_id
	FROM (SELECT * FROM events ORDER BY row_id LIMIT 500000 OFFSET 8000000) e, json_each(e.targets) t;
--> statement-breakpoint
INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
	SELECT e.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), e.occurred_at, e.seq, e.row_id
	FROM (SELECT * FROM events ORDER BY row_id LIMIT 500000 OFFSET 8500000) e, json_each(e.targets) t;
--> statement-breakpoint
INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
	SELECT e.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), e.occurred_at, e.seq, e.row_id
	FROM (SELECT * FROM events ORDER BY row_id LIMIT 500000 OFFSET 9000000) e, json_each(e.targets) t;
--> statement-breakpoint
INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
	SELECT e.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), e.occurred_at, e.seq, e.row_id
	FROM (SELECT * FROM events ORDER BY row_id LIMIT 500000 OFFSET 9500000) e, json_each(e.targets) t;
