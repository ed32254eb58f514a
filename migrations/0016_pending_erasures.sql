-- Erasure at any size (issue 21), event shards: an erasure answers at once and a
-- job scrubs the rows in bounded steps; until it has finished, every read applies
-- the erasures listed here (src/reads/pending-erasures.ts), so no erased value is
-- served meanwhile. One row per erasure still being applied, dropped by its job's
-- last step. subject_sha256 is sha256("<by>:<value>"), as in the ledger's erasure
-- record: never the clear value. through_seq: the chain head when the erasure was
-- accepted; events appended after it are not covered (as before, when an erasure
-- ran under the commit lock and later appends committed after it).
CREATE TABLE `pending_erasures` (
	`project_id` text NOT NULL,
	`erasure_id` integer NOT NULL,
	`by` text NOT NULL,
	`subject_sha256` text NOT NULL,
	`organization` text,
	`erased_at` text NOT NULL,
	`through_seq` integer NOT NULL,
	PRIMARY KEY(`project_id`, `erasure_id`)
);
