-- Stream encodings (issue 37): how a log stream puts a batch's events in its
-- request body (src/streams/batch.ts, ENCODINGS). NULL: the type's default,
-- as every stream made before this wrote: webhook 'json' (the signed
-- envelope), s3 'ndjson' (gzip NDJSON objects). 'ndjson' on a webhook: one
-- event a line; 'parquet' on s3: one Parquet file per batch (OCSF only).
-- Splunk and Datadog streams keep NULL.
ALTER TABLE `streams` ADD `encoding` text;
