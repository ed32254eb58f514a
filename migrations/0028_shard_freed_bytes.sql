-- Shards measured by the bytes they hold, not their file (issue 38, item 5), control
-- database. D1 answers no PRAGMA page_count or freelist_count and has no dbstat, and
-- a deleted row's pages stay in the file as free pages that later writes reuse, so a
-- shard whose events were all archived kept counting as full. freed_bytes estimates
-- those free pages: what archiving and shard moves deleted since the file last grew
-- (src/storage/shard-pressure.ts). It returns to 0 whenever the file is seen to grow,
-- since a file grows only once no free page is left, so the measure is the file's own
-- size exactly whenever the shard is really filling.
ALTER TABLE `shards` ADD `freed_bytes` integer DEFAULT 0 NOT NULL;
