-- An event's second target in two indexes on the events table too, as 0033 put its first
-- (issue 38, storage v2): a row of event_targets costs three billed rows over its event's
-- life (the row and its type index at insert, the row again when the event is archived),
-- two index entries cost two, at insert only. So an event naming two targets saves a row,
-- and event_targets keeps only the third and later. Partial on events that name a second
-- target: the others take no entry. Rows stored before keep their second target's row
-- until their event goes; a target filter walks all three in list order and lists an
-- event found twice once (src/model/event-query.ts). Built in one statement each: on a
-- bench shard of 2.47M events (3.5 GB, none with a second target) 1.0 s and 0.8 s; over
-- events that all name one, expect about 0033's 4.1 s and 3.2 s, inside D1's 30 s.
CREATE INDEX `events_second_target_type_idx` ON `events` (`project_id`, (targets ->> '$[1].type'), `occurred_at`, `seq`) WHERE json_array_length(targets) > 1;
--> statement-breakpoint
CREATE INDEX `events_second_target_id_idx` ON `events` (`project_id`, (targets ->> '$[1].type'), (targets ->> '$[1].id'), `occurred_at`, `seq`) WHERE json_array_length(targets) > 1;
--> statement-breakpoint
DROP TRIGGER `event_targets_after_insert`;
--> statement-breakpoint
-- Every target past the second (json_each's key is the array index); the delete trigger
-- still removes every target's row, so rows written before this migration go too.
CREATE TRIGGER `event_targets_after_insert` AFTER INSERT ON `events` BEGIN
	INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id)
		SELECT new.project_id, json_extract(t.value, '$.type'), json_extract(t.value, '$.id'), new.occurred_at, new.seq, new.row_id
		FROM json_each(new.targets) t WHERE t.key > 1;
END;
