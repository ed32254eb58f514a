-- The periods' low marks (issue 38, storage v2; src/model/periods.ts, armSpans). A period takes commits from a
-- little before its start till its grace after its end, and their rows may carry any occurred_at, so a read had to
-- read every growing period on every page: an empty current week on a week's first day, or the current week under
-- a cursor below all it holds. So every commit written to a period writes here, in its own batch, the lowest
-- occurred_at of its rows, kept as the least of all the project's commits there (an upsert that writes only when
-- lower: the project's first commit there, and a backdated one). A read looks for the marks in the batch that
-- already looks for the backlog mark (src/storage/own-writes.ts) and skips a growing period that holds nothing
-- at or below where its page starts. One row a project a period, none an event; dropped with the period. Rows
-- of a period from before this table have no mark: a read finds them by the period's span.
CREATE TABLE `period_lows` (
	`project_id` text NOT NULL,
	`period` integer NOT NULL,
	`lo` text NOT NULL,
	PRIMARY KEY(`project_id`, `period`)
) WITHOUT ROWID;
