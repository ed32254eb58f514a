-- The filter indexes hold only the events their filter can match (issue 38,
-- storage v2). An event with no organization, no actor id or no address (the
-- spec: "leave out for single-tenant or system events") wrote an entry to each
-- of these indexes anyway, a billed row it could never be found by. A filter
-- `organization = ?` implies `organization IS NOT NULL`, so SQLite walks the
-- partial index exactly as before (src/model/event-query.ts names it with
-- INDEXED BY). Same names, dropped and built again in one migration: 3.8 s for
-- 2.47M events here for one index, so a full shard stays inside D1's 30 s per
-- statement.
DROP INDEX `events_org_time_idx`;
--> statement-breakpoint
CREATE INDEX `events_org_time_idx` ON `events` (`project_id`, `organization`, `occurred_at`, `seq`) WHERE `organization` IS NOT NULL;
--> statement-breakpoint
DROP INDEX `events_actor_time_idx`;
--> statement-breakpoint
CREATE INDEX `events_actor_time_idx` ON `events` (`project_id`, `actor_id`, `occurred_at`, `seq`) WHERE `actor_id` IS NOT NULL;
--> statement-breakpoint
DROP INDEX `events_ip_time_idx`;
--> statement-breakpoint
CREATE INDEX `events_ip_time_idx` ON `events` (`project_id`, `ip_address`, `occurred_at`, `seq`) WHERE `ip_address` IS NOT NULL;
