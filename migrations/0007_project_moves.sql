-- Moving a project between event shards (issue 14). move_to is the shard an
-- operator asked the project to move to (npm run projects:move); the project's
-- ledger performs the move and clears it when the source rows are gone. Only
-- the control database uses it; every database gets the same migrations.
ALTER TABLE `projects` ADD `move_to` integer;
