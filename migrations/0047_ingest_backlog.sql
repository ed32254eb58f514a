-- A project's backlog mark (issue 38, item 3; src/chain/commit-backlog.ts): while its shard lags, the project's
-- ledger answers appends once they are journaled in its own storage, before D1 has their rows, and this row
-- says so. It is written before the first such answer and deleted in the same batch that indexes the last of
-- them, so a read that finds no mark in its own snapshot saw every commit answered before it began
-- (src/storage/own-writes.ts reads it in the same batch as the rows). One row a backlog episode, none an event.
-- `tag` is the project's id tag (src/model/event-id.ts): a public receipt names only its event, and finds by it
-- the project whose ledger may hold the event in its backlog (src/receipts/receipt.ts).
CREATE TABLE `ingest_backlog` (
	`project_id` text PRIMARY KEY NOT NULL,
	`since` text NOT NULL,
	`tag` integer NOT NULL
) WITHOUT ROWID;
