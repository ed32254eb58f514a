-- A keyed project's rows take no entry in the seq index (issue 38, storage v2; src/model/row-keys.ts): its
-- rows sit at row_id = its number x 2^40 + seq (0045), so a read by seq finds them by row id, and the entry
-- each one wrote at ingest was a billed row read by nothing. The index becomes partial over the row ids
-- below 2^40, the rows of projects with no key, and keeps its name: every reader on that path names it
-- (INDEXED BY) with the term `row_id < 1099511627776`, which SQLite needs, written exactly, to take a
-- partial index. One seq per project still holds on either path: a keyed project's seq is a row id less
-- its first, and the row id is the table's key. Dropped and built again in one migration, as 0030 did: an entry a row with no key, once.
DROP INDEX `events_project_seq_idx`;
--> statement-breakpoint
CREATE UNIQUE INDEX `events_project_seq_idx` ON `events` (`project_id`, `seq`) WHERE `row_id` < 1099511627776;
--> statement-breakpoint
-- The triggers that keep a commit's spans, runs and sets ask, when a row goes, whether any row of the range
-- is left. They asked the seq index, which no longer holds a keyed row; each is now two, one a path. For a
-- keyed row its own row id less its seq is its project's first row id, so the range's rows are a range of
-- row ids. Each trigger's WHEN picks its path, before its body runs.
DROP TRIGGER `commit_spans_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `commit_spans_after_delete` AFTER DELETE ON `events` WHEN old.id_indexed = 0 AND old.row_id < 1099511627776 BEGIN
	DELETE FROM commit_spans WHERE received_at = old.received_at AND project_id = old.project_id
		AND first_seq <= old.seq AND last_seq >= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.row_id < 1099511627776 AND e.project_id = old.project_id AND e.seq BETWEEN commit_spans.first_seq AND commit_spans.last_seq);
END;
--> statement-breakpoint
CREATE TRIGGER `keyed_commit_spans_after_delete` AFTER DELETE ON `events` WHEN old.id_indexed = 0 AND old.row_id >= 1099511627776 BEGIN
	DELETE FROM commit_spans WHERE received_at = old.received_at AND project_id = old.project_id
		AND first_seq <= old.seq AND last_seq >= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.row_id BETWEEN old.row_id - old.seq + commit_spans.first_seq AND old.row_id - old.seq + commit_spans.last_seq);
END;
--> statement-breakpoint
DROP TRIGGER `ip_runs_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `ip_runs_after_delete` AFTER DELETE ON `events` WHEN old.ip_run = 1 AND old.row_id < 1099511627776 BEGIN
	DELETE FROM ip_runs WHERE project_id = old.project_id AND ip = old.ip_address
		AND last_seq BETWEEN old.seq AND old.seq + 1023 AND first_seq <= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.row_id < 1099511627776 AND e.project_id = old.project_id AND e.seq BETWEEN ip_runs.first_seq AND ip_runs.last_seq AND e.ip_address = ip_runs.ip);
END;
--> statement-breakpoint
CREATE TRIGGER `keyed_ip_runs_after_delete` AFTER DELETE ON `events` WHEN old.ip_run = 1 AND old.row_id >= 1099511627776 BEGIN
	DELETE FROM ip_runs WHERE project_id = old.project_id AND ip = old.ip_address
		AND last_seq BETWEEN old.seq AND old.seq + 1023 AND first_seq <= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.row_id BETWEEN old.row_id - old.seq + ip_runs.first_seq AND old.row_id - old.seq + ip_runs.last_seq AND e.ip_address = ip_runs.ip);
END;
--> statement-breakpoint
DROP TRIGGER `ip_runs_after_scrub`;
--> statement-breakpoint
CREATE TRIGGER `ip_runs_after_scrub` AFTER UPDATE OF ip_address ON `events` WHEN old.ip_run = 1 AND new.ip_address IS NOT old.ip_address AND old.row_id < 1099511627776 BEGIN
	DELETE FROM ip_runs WHERE project_id = old.project_id AND ip = old.ip_address
		AND last_seq BETWEEN old.seq AND old.seq + 1023 AND first_seq <= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.row_id < 1099511627776 AND e.project_id = old.project_id AND e.seq BETWEEN ip_runs.first_seq AND ip_runs.last_seq AND e.ip_address = ip_runs.ip);
END;
--> statement-breakpoint
CREATE TRIGGER `keyed_ip_runs_after_scrub` AFTER UPDATE OF ip_address ON `events` WHEN old.ip_run = 1 AND new.ip_address IS NOT old.ip_address AND old.row_id >= 1099511627776 BEGIN
	DELETE FROM ip_runs WHERE project_id = old.project_id AND ip = old.ip_address
		AND last_seq BETWEEN old.seq AND old.seq + 1023 AND first_seq <= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.row_id BETWEEN old.row_id - old.seq + ip_runs.first_seq AND old.row_id - old.seq + ip_runs.last_seq AND e.ip_address = ip_runs.ip);
END;
--> statement-breakpoint
DROP TRIGGER `target_type_sets_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `target_type_sets_after_delete` AFTER DELETE ON `events` WHEN old.type_sets <> 0 AND old.row_id < 1099511627776 BEGIN
	DELETE FROM target_type_sets WHERE (old.type_sets & 1) <> 0 AND project_id = old.project_id AND at = 0 AND type = (old.targets ->> '$[0].type')
		AND last_seq BETWEEN old.seq AND old.seq + 1023 AND first_seq <= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.row_id < 1099511627776 AND e.project_id = old.project_id AND e.seq BETWEEN target_type_sets.first_seq AND target_type_sets.last_seq
			AND (e.type_sets & 1) <> 0 AND (e.targets ->> '$[0].type') = target_type_sets.type);
	DELETE FROM target_type_sets WHERE (old.type_sets & 2) <> 0 AND project_id = old.project_id AND at = 1 AND type = (old.targets ->> '$[1].type')
		AND last_seq BETWEEN old.seq AND old.seq + 1023 AND first_seq <= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.row_id < 1099511627776 AND e.project_id = old.project_id AND e.seq BETWEEN target_type_sets.first_seq AND target_type_sets.last_seq
			AND (e.type_sets & 2) <> 0 AND (e.targets ->> '$[1].type') = target_type_sets.type);
END;
--> statement-breakpoint
CREATE TRIGGER `keyed_target_type_sets_after_delete` AFTER DELETE ON `events` WHEN old.type_sets <> 0 AND old.row_id >= 1099511627776 BEGIN
	DELETE FROM target_type_sets WHERE (old.type_sets & 1) <> 0 AND project_id = old.project_id AND at = 0 AND type = (old.targets ->> '$[0].type')
		AND last_seq BETWEEN old.seq AND old.seq + 1023 AND first_seq <= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.row_id BETWEEN old.row_id - old.seq + target_type_sets.first_seq AND old.row_id - old.seq + target_type_sets.last_seq
			AND (e.type_sets & 1) <> 0 AND (e.targets ->> '$[0].type') = target_type_sets.type);
	DELETE FROM target_type_sets WHERE (old.type_sets & 2) <> 0 AND project_id = old.project_id AND at = 1 AND type = (old.targets ->> '$[1].type')
		AND last_seq BETWEEN old.seq AND old.seq + 1023 AND first_seq <= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.row_id BETWEEN old.row_id - old.seq + target_type_sets.first_seq AND old.row_id - old.seq + target_type_sets.last_seq
			AND (e.type_sets & 2) <> 0 AND (e.targets ->> '$[1].type') = target_type_sets.type);
END;
--> statement-breakpoint
DROP TRIGGER `action_sets_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `action_sets_after_delete` AFTER DELETE ON `events` WHEN old.action_in_set = 1 AND old.row_id < 1099511627776 BEGIN
	DELETE FROM action_sets WHERE project_id = old.project_id AND action = old.action AND received_at = old.received_at
		AND first_seq BETWEEN old.seq - 1023 AND old.seq AND last_seq >= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.row_id < 1099511627776 AND e.project_id = old.project_id AND e.seq BETWEEN action_sets.first_seq AND action_sets.last_seq
			AND e.action_in_set = 1 AND e.action = action_sets.action);
END;
--> statement-breakpoint
CREATE TRIGGER `keyed_action_sets_after_delete` AFTER DELETE ON `events` WHEN old.action_in_set = 1 AND old.row_id >= 1099511627776 BEGIN
	DELETE FROM action_sets WHERE project_id = old.project_id AND action = old.action AND received_at = old.received_at
		AND first_seq BETWEEN old.seq - 1023 AND old.seq AND last_seq >= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.row_id BETWEEN old.row_id - old.seq + action_sets.first_seq AND old.row_id - old.seq + action_sets.last_seq
			AND e.action_in_set = 1 AND e.action = action_sets.action);
END;
--> statement-breakpoint
DROP TRIGGER `organization_sets_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `organization_sets_after_delete` AFTER DELETE ON `events` WHEN old.org_in_set = 1 AND old.row_id < 1099511627776 BEGIN
	DELETE FROM organization_sets WHERE project_id = old.project_id AND organization = old.organization AND received_at = old.received_at
		AND first_seq BETWEEN old.seq - 1023 AND old.seq AND last_seq >= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.row_id < 1099511627776 AND e.project_id = old.project_id AND e.seq BETWEEN organization_sets.first_seq AND organization_sets.last_seq
			AND e.org_in_set = 1 AND e.organization = organization_sets.organization);
END;
--> statement-breakpoint
CREATE TRIGGER `keyed_organization_sets_after_delete` AFTER DELETE ON `events` WHEN old.org_in_set = 1 AND old.row_id >= 1099511627776 BEGIN
	DELETE FROM organization_sets WHERE project_id = old.project_id AND organization = old.organization AND received_at = old.received_at
		AND first_seq BETWEEN old.seq - 1023 AND old.seq AND last_seq >= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.row_id BETWEEN old.row_id - old.seq + organization_sets.first_seq AND old.row_id - old.seq + organization_sets.last_seq
			AND e.org_in_set = 1 AND e.organization = organization_sets.organization);
END;
--> statement-breakpoint
DROP TRIGGER `address_sets_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `address_sets_after_delete` AFTER DELETE ON `events` WHEN old.ip_run = 2 AND old.row_id < 1099511627776 BEGIN
	DELETE FROM address_sets WHERE project_id = old.project_id AND ip_address = old.ip_address AND received_at = old.received_at
		AND first_seq BETWEEN old.seq - 1023 AND old.seq AND last_seq >= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.row_id < 1099511627776 AND e.project_id = old.project_id AND e.seq BETWEEN address_sets.first_seq AND address_sets.last_seq
			AND e.ip_run = 2 AND e.ip_address = address_sets.ip_address);
END;
--> statement-breakpoint
CREATE TRIGGER `keyed_address_sets_after_delete` AFTER DELETE ON `events` WHEN old.ip_run = 2 AND old.row_id >= 1099511627776 BEGIN
	DELETE FROM address_sets WHERE project_id = old.project_id AND ip_address = old.ip_address AND received_at = old.received_at
		AND first_seq BETWEEN old.seq - 1023 AND old.seq AND last_seq >= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.row_id BETWEEN old.row_id - old.seq + address_sets.first_seq AND old.row_id - old.seq + address_sets.last_seq
			AND e.ip_run = 2 AND e.ip_address = address_sets.ip_address);
END;
--> statement-breakpoint
DROP TRIGGER `address_sets_after_scrub`;
--> statement-breakpoint
CREATE TRIGGER `address_sets_after_scrub` AFTER UPDATE OF ip_address ON `events` WHEN old.ip_run = 2 AND new.ip_address IS NOT old.ip_address AND old.row_id < 1099511627776 BEGIN
	DELETE FROM address_sets WHERE project_id = old.project_id AND ip_address = old.ip_address AND received_at = old.received_at
		AND first_seq BETWEEN old.seq - 1023 AND old.seq AND last_seq >= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.row_id < 1099511627776 AND e.project_id = old.project_id AND e.seq BETWEEN address_sets.first_seq AND address_sets.last_seq
			AND e.ip_run = 2 AND e.ip_address = address_sets.ip_address);
END;
--> statement-breakpoint
CREATE TRIGGER `keyed_address_sets_after_scrub` AFTER UPDATE OF ip_address ON `events` WHEN old.ip_run = 2 AND new.ip_address IS NOT old.ip_address AND old.row_id >= 1099511627776 BEGIN
	DELETE FROM address_sets WHERE project_id = old.project_id AND ip_address = old.ip_address AND received_at = old.received_at
		AND first_seq BETWEEN old.seq - 1023 AND old.seq AND last_seq >= old.seq
		AND NOT EXISTS (SELECT 1 FROM events e WHERE e.row_id BETWEEN old.row_id - old.seq + address_sets.first_seq AND old.row_id - old.seq + address_sets.last_seq
			AND e.ip_run = 2 AND e.ip_address = address_sets.ip_address);
END;
