-- A commit of one event (an app that sends one event a request makes one of every event) wrote a
-- commit_spans row to be found by id (0029) and to carry its append's name (0032): a billed row at
-- ingest and its delete at archive. The id index entry the span saves costs one row at ingest and none
-- at archive (D1 bills a deleted index entry as no row). So a commit's lone row keeps its id index entry
-- (id_indexed = 1, found as rows before 0029 are), and its append's name goes on the row itself: bytes,
-- no row of its own (src/model/row-indexing.ts). Commits of two events or more keep their span.
ALTER TABLE `events` ADD `append_name` text;
--> statement-breakpoint
-- As commit_spans_given_up (0034) for a span: a lone row naming an append its worker gave up on is
-- refused, and with it the commit's whole batch (src/chain/landed-appends.ts). One key read per such row.
CREATE TRIGGER `events_given_up` BEFORE INSERT ON `events` WHEN new.append_name IS NOT NULL BEGIN
	SELECT RAISE(ABORT, 'witness: this commit names an append its worker gave up on; nothing of it was stored')
	WHERE EXISTS (SELECT 1 FROM given_up_appends g WHERE g.token = new.append_name);
END;
