-- Storage v2, back-pressure (issue 38): an operator's per-project ingest
-- budget in events per minute (npm run projects:limits). NULL: the default
-- (src/chain/ingest-admission.ts, DEFAULT_EVENTS_PER_MINUTE).
ALTER TABLE `projects` ADD `ingest_events_per_minute` integer;
