-- Full-text index over the searchable attributes (action, actor_name, actor_email,
-- actor_id). drizzle-kit does not model virtual tables, so this is hand-written.
-- External content: the text lives once, in events; triggers keep the index in step.
CREATE VIRTUAL TABLE `events_fts` USING fts5(
	action, actor_name, actor_email, actor_id,
	content='events', content_rowid='row_id',
	tokenize='unicode61 remove_diacritics 2',
	prefix='2 3'
);
--> statement-breakpoint
CREATE TRIGGER `events_fts_after_insert` AFTER INSERT ON `events` BEGIN
	INSERT INTO events_fts(rowid, action, actor_name, actor_email, actor_id)
	VALUES (new.row_id, new.action, new.actor_name, new.actor_email, new.actor_id);
END;
--> statement-breakpoint
CREATE TRIGGER `events_fts_after_delete` AFTER DELETE ON `events` BEGIN
	INSERT INTO events_fts(events_fts, rowid, action, actor_name, actor_email, actor_id)
	VALUES ('delete', old.row_id, old.action, old.actor_name, old.actor_email, old.actor_id);
END;
--> statement-breakpoint
CREATE TRIGGER `events_fts_after_update` AFTER UPDATE OF action, actor_name, actor_email, actor_id ON `events` BEGIN
	INSERT INTO events_fts(events_fts, rowid, action, actor_name, actor_email, actor_id)
	VALUES ('delete', old.row_id, old.action, old.actor_name, old.actor_email, old.actor_id);
	INSERT INTO events_fts(rowid, action, actor_name, actor_email, actor_id)
	VALUES (new.row_id, new.action, new.actor_name, new.actor_email, new.actor_id);
END;
