-- An event's first target in two indexes on the events table instead of a row of
-- event_targets and its type index (issue 38, storage v2). D1 bills a deleted table
-- row as a row written and a deleted index entry as none (measured in workerd: 100
-- rows with two index entries each deleted for 100 rows written), so the target's
-- row cost a row again when its event was archived; an index entry costs only its
-- insert. Most events name one target: event_targets now holds only the others
-- (and, until they are archived, the first targets of events stored before), and a
-- target filter walks both in list order (src/model/event-query.ts).
-- Each index is built in one statement over the shard's events: on a copy of a bench
-- shard (2.47M events, a 3.5 GB file) 4.1 s and 3.2 s, so a full 10 GB shard stays
-- inside D1's 30 s a statement.
CREATE INDEX `events_first_target_type_idx` ON `events` (`project_id`, (targets ->> '$[0].type'), `occurred_at`, `seq`) WHERE targets <> '[]';
--> statement-breakpoint
CREATE INDEX `events_first_target_id_idx` ON `events` (`project_id`, (targets ->> '$[0].type'), (targets ->> '$[0].id'), `occurred_at`, `seq`) WHERE targets <> '[]';
--> statement-breakpoint
DROP TRIGGER `event_targets_after_insert`;
--> statement-breakpoint
-- Every target but the first (json_each's key is the array index); the delete trigger
-- still removes every target's row, so rows written before this migration go too.
CREATE TRIGGER `event_targets_after_insert` AFTER INSERT ON `events` BEGIN
	INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
		SELECT new.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), new.occurred_at, new.seq, new.row_id
		FROM json_each(new.targets) t WHERE t.key > 0;
END;
