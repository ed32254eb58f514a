-- Events stored before search groups (0031) keep no words of their own (search_words NULL) and an entry each
-- under their project's tag, so a search took such a row at its entry's word: an entry a database writer
-- planted at its id listed it under words it lacks. The daily cron's reindexBacklog now gives each its words
-- and an entry as a group of one, and a search checks it as every other row. It must look at every row again:
-- the range it walked before (rows from before 0004) ends below those written between 0004 and 0031. It
-- reads at most 100,000 rows a step, and writes only for rows without words (three rows each, once).
UPDATE `search_backlog` SET `next_row_id` = 1, `last_row_id` = CASE WHEN EXISTS (SELECT 1 FROM `events`) THEN NULL ELSE 0 END WHERE `id` = 1;
