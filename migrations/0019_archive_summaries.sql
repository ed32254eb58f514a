-- Per-segment summaries (issue 22), event shards: one row per sealed archive segment, a
-- Bloom filter of keyed hashes (HMAC under a key derived from SIGNING_KEYS, so no clear
-- personal data and nothing a dictionary can test without the secret) of the segment's
-- organizations, actor ids and e-mails, IP addresses, actions, targets and search-term
-- prefixes (src/storage/archive-summary.ts), as base64 text (D1 would send a blob as a JSON array of numbers). Reads, erasure and legal-hold checks skip the
-- segments whose filter says a value cannot be inside. A summary counts only while its
-- sha256 is the segment's: a segment rewritten since (erasure, retention) is read whole
-- until its summary is written again. `mac` authenticates the row under the same key, so
-- a database writer cannot make an erasure skip a segment. Segments sealed before this
-- migration get theirs from the archiver's resumable backfill (archive-companions.ts).
CREATE TABLE `archive_summaries` (
	`project_id` text NOT NULL,
	`first_seq` integer NOT NULL,
	`sha256` text NOT NULL,
	`key_version` integer NOT NULL,
	`filter` text NOT NULL,
	`mac` text NOT NULL,
	PRIMARY KEY(`project_id`, `first_seq`)
) WITHOUT ROWID;
