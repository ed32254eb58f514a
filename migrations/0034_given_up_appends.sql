-- The appends a worker gave up on (issue 38: a crash at any step of a commit duplicates nothing).
-- A worker whose call to the ledger failed looks for its append among the commits (0032) and answers
-- "nothing was stored, safe to retry" when it is not there. But a ledger the runtime stopped may have
-- sent its D1 batch already, and D1 may run it after that look: the events would land after their
-- client was told to send them again, and its retry would store them twice. So the worker first
-- writes its append's name here, in the same D1 batch as its look (src/chain/landed-appends.ts), and
-- a commit naming a given-up append is refused whole: D1 runs one batch at a time, so either the
-- commit landed before the look found it, or it comes after and stores nothing. A row is written
-- only when a call to the ledger failed, and each such write drops the rows of a day ago: a batch
-- in flight lives seconds, and a name is a random UUID that no later append reuses.
CREATE TABLE `given_up_appends` (
	`token` text PRIMARY KEY NOT NULL,
	`given_up_at` text NOT NULL
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `given_up_appends_at_idx` ON `given_up_appends` (`given_up_at`);
--> statement-breakpoint
-- Reads one key per append of the commit (rows read, not written); RAISE(ABORT) fails the statement,
-- and with it the commit's whole batch, one transaction.
CREATE TRIGGER `commit_spans_given_up` BEFORE INSERT ON `commit_spans` WHEN new.appends IS NOT NULL BEGIN
	SELECT RAISE(ABORT, 'witness: this commit names an append its worker gave up on; nothing of it was stored')
	WHERE EXISTS (SELECT 1 FROM json_each(new.appends) j JOIN given_up_appends g ON g.token = j.value ->> 0);
END;
