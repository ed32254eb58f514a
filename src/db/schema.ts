import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/** One tenant of Witness. Its chain head lives in its ledger's own storage, not here. */
export const projects = sqliteTable("projects", {
  id: text("id").primaryKey(),
  created_at: text("created_at").notNull(),
  /** The event database (EVENTS_<shard>) that holds this project's events. */
  shard: integer("shard").notNull().default(0),
  /** Public address of the project's transparency log (/logs/<log_id>): 128 random bits, never the id. */
  log_id: text("log_id"),
}, (t) => [uniqueIndex("projects_log_id_idx").on(t.log_id)]);

/** Keys are `wtn_live_<prefix>_<secret>`; only a SHA-256 of the secret is kept. */
export const apiKeys = sqliteTable(
  "api_keys",
  {
    prefix: text("prefix").primaryKey(),
    project_id: text("project_id")
      .notNull()
      .references(() => projects.id),
    secret_hash: text("secret_hash").notNull(),
    created_at: text("created_at").notNull(),
    revoked_at: text("revoked_at"),
    /** Comma-separated subset of ingest, read, admin (src/auth/scopes.ts); keys older than scopes are admin. */
    scopes: text("scopes").notNull().default("admin"),
    label: text("label"),
    /** NULL: never expires. */
    expires_at: text("expires_at"),
    /** Prefix of the admin key that made it (POST /v1/keys); NULL when an operator script did. */
    created_by: text("created_by"),
    /** Which lifecycle events (created, revoked) the project's chain holds; the daily sweep appends what is missing. */
    audit_state: text("audit_state"),
  },
  (t) => [index("api_keys_project_idx").on(t.project_id)],
);

export const events = sqliteTable(
  "events",
  {
    /** Integer key so the FTS index can point at rows with a rowid VACUUM never renumbers. */
    row_id: integer("row_id").primaryKey(),
    /** Unique: the ledger mints it (model/event-id.ts); the index below holds only rows a commit span does not find (migration 0029). */
    id: text("id").notNull(),
    project_id: text("project_id").notNull(),
    seq: integer("seq").notNull(),
    action: text("action").notNull(),
    organization: text("organization"),
    actor_id: text("actor_id"),
    actor_type: text("actor_type"),
    actor_name: text("actor_name"),
    actor_email: text("actor_email"),
    /** Canonical JSON text; hashed as stored. */
    targets: text("targets").notNull(),
    /** Canonical JSON text; hashed as stored. */
    metadata: text("metadata").notNull(),
    occurred_at: text("occurred_at").notNull(),
    received_at: text("received_at").notNull(),
    ip_address: text("ip_address"),
    user_agent: text("user_agent"),
    /** Salt of the personal-data commitment; erased together with the clear values. */
    pii_salt: text("pii_salt"),
    pii_commitment: text("pii_commitment").notNull(),
    hash: text("hash").notNull(),
    prev_hash: text("prev_hash"),
    signature: text("signature"),
    anonymized_at: text("anonymized_at"),
    /** Before/after values (canonical JSON text of an array), NULL when none were sent; hashed when present (migration 0021). */
    changes: text("changes"),
    /** The catalog schema version checked at ingest, NULL when none was; hashed when present. */
    schema_version: integer("schema_version"),
    /** 1 passed, 0 broke schema_version and was stored anyway (catalog mode warn); hashed when present. */
    schema_valid: integer("schema_valid"),
    /** How it is found by id: 0 by its commit's span (commit_spans), 1 by the id index (a commit's lone row, every other writer), 2 at its id's instant in the time index (a lone live row: migration 0037). */
    id_indexed: integer("id_indexed").notNull().default(1),
    /** How far back in row_id its search group's first event is: the group's index entry is row_id - search_lead (migration 0031). */
    search_lead: integer("search_lead").notNull().default(0),
    /** Its searchable words (model/search-index.ts), or NULL for rows with an index entry of their own (every writer but the commit). */
    search_words: text("search_words"),
    /** The name of its append when its commit held it alone (no span carries it: migration 0036), else NULL. */
    append_name: text("append_name"),
    /** 1: found by its address through an ip_runs row (migration 0038), 2: a live row found through its commit's address_sets row (migration 0043), both with no events_ip_time_idx entry; 0 (a lone row, rows before migration 0038): by the index. */
    ip_run: integer("ip_run").notNull().default(0),
    /** Bit 1 << place (0: first target, 1: second): found by that target's type through a target_type_sets row, with no entry in that place's type index (migration 0039); 0 for rows before it. */
    type_sets: integer("type_sets").notNull().default(0),
    /** 1: a live row of a commit's span, found in time order through its span (commit_spans.live), with no time index entry (migration 0040); 0: by the index. */
    time_in_span: integer("time_in_span").notNull().default(0),
    /** 1: a live row found by its action through its commit's action_sets row, with no action index entry (migration 0041); 0: by the index. */
    action_in_set: integer("action_in_set").notNull().default(0),
    /** 1: a live row found by its organization through its commit's organization_sets row, with no organization index entry (migration 0042); 0: by the index. */
    org_in_set: integer("org_in_set").notNull().default(0),
  },
  (t) => [
    // One seq per project: a second writer can never fork the chain. Partial (migration 0046): a keyed project's
    // row is found by its row id, made from its seq (src/model/row-keys.ts), and the row id is the table's key.
    uniqueIndex("events_project_seq_idx").on(t.project_id, t.seq).where(sql`row_id < 1099511627776`),
    uniqueIndex("events_legacy_id_unique").on(t.id).where(sql`id_indexed = 1`),
    // The address last (migration 0038): a walk of a common address checks it without reading the row.
    // A commit's live rows are in time order through its span instead (migration 0040).
    index("events_project_time_idx").on(t.project_id, t.occurred_at, t.seq, t.ip_address).where(sql`time_in_span = 0`),
    // Partial (migration 0030): an event without the field is never a match, and writes no entry.
    // A commit's live rows of a repeated organization are found through organization_sets instead (migration 0042).
    index("events_org_time_idx").on(t.project_id, t.organization, t.occurred_at, t.seq).where(sql`organization IS NOT NULL AND org_in_set = 0`),
    index("events_actor_time_idx").on(t.project_id, t.actor_id, t.occurred_at, t.seq).where(sql`actor_id IS NOT NULL`),
    // A commit's live rows of a repeated action are found through action_sets instead (migration 0041).
    index("events_action_time_idx").on(t.project_id, t.action, t.occurred_at, t.seq).where(sql`action_in_set = 0`),
    // A run's rows are found through ip_runs instead (migration 0038), a live set's through address_sets (0043).
    index("events_ip_time_idx").on(t.project_id, t.ip_address, t.occurred_at, t.seq).where(sql`ip_address IS NOT NULL AND ip_run = 0`),
    // The first target (migration 0033): index entries cost no row when the event is deleted.
    // A type's rows in a set are found through target_type_sets instead (migration 0039).
    index("events_first_target_type_idx").on(t.project_id, sql`(targets ->> '$[0].type')`, t.occurred_at, t.seq).where(sql`targets <> '[]' AND (type_sets & 1) = 0`),
    index("events_first_target_id_idx").on(t.project_id, sql`(targets ->> '$[0].type')`, sql`(targets ->> '$[0].id')`, t.occurred_at, t.seq).where(sql`targets <> '[]'`),
    // The second target likewise (migration 0035), on events that name one; event_targets holds the third and later.
    index("events_second_target_type_idx").on(t.project_id, sql`(targets ->> '$[1].type')`, t.occurred_at, t.seq).where(sql`json_array_length(targets) > 1 AND (type_sets & 2) = 0`),
    index("events_second_target_id_idx").on(t.project_id, sql`(targets ->> '$[1].type')`, sql`(targets ->> '$[1].id')`, t.occurred_at, t.seq).where(sql`json_array_length(targets) > 1`),
  ],
);

/** A retried ingest with the same Idempotency-Key returns these events again. */
export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    project_id: text("project_id").notNull(),
    key: text("key").notNull(),
    event_ids: text("event_ids").notNull(),
    created_at: text("created_at").notNull(),
    /** SHA-256 of the request body: reusing the key with another body is refused. */
    request_hash: text("request_hash"),
  },
  (t) => [primaryKey({ columns: [t.project_id, t.key] }), index("idempotency_created_idx").on(t.created_at)],
);

/** Retention plan: days to keep events whose action matches pattern (`*` is the default rule). */
export const retentionRules = sqliteTable(
  "retention_rules",
  {
    project_id: text("project_id").notNull(),
    pattern: text("pattern").notNull(),
    days: integer("days").notNull(),
  },
  (t) => [primaryKey({ columns: [t.project_id, t.pattern] })],
);

/** One record per contiguous run of events purged by retention; lets verify bridge the gap. */
export const retentionGaps = sqliteTable(
  "retention_gaps",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    project_id: text("project_id").notNull(),
    /** Hash of the event before the run (null when the run starts the chain). */
    before_hash: text("before_hash"),
    /** Hash of the last purged event of the run. */
    last_hash: text("last_hash").notNull(),
    first_seq: integer("first_seq").notNull(),
    last_seq: integer("last_seq").notNull(),
    purged_count: integer("purged_count").notNull(),
    purged_at: text("purged_at").notNull(),
    /** `v<N>:` HMAC of the record (SIGNING_KEYS), so a gap cannot be forged to hide a deletion. */
    signature: text("signature"),
    /** JSON list of the rules the purge applied ({pattern, days, cutoff}); null on records made before it was kept. */
    rules: text("rules"),
  },
  (t) => [
    index("retention_gaps_project_idx").on(t.project_id, t.last_hash),
    // One record per hole: the purge finds its neighbours by seq to merge them.
    uniqueIndex("retention_gaps_first_seq_idx").on(t.project_id, t.first_seq),
    index("retention_gaps_last_seq_idx").on(t.project_id, t.last_seq),
  ],
);

/**
 * One sealed archive segment of a project (event shards; migrations 0009, 0010).
 * The csv_/json_ columns describe the segment's pre-rendered export
 * companions; null on segments sealed before they existed.
 */
export const archiveSegments = sqliteTable(
  "archive_segments",
  {
    project_id: text("project_id").notNull(),
    first_seq: integer("first_seq").notNull(),
    last_seq: integer("last_seq").notNull(),
    first_received_at: text("first_received_at").notNull(),
    last_received_at: text("last_received_at").notNull(),
    first_occurred_at: text("first_occurred_at").notNull(),
    last_occurred_at: text("last_occurred_at").notNull(),
    count: integer("count").notNull(),
    bytes: integer("bytes").notNull(),
    sha256: text("sha256").notNull(),
    object_key: text("object_key").notNull(),
    created_at: text("created_at").notNull(),
    csv_sha256: text("csv_sha256"),
    csv_bytes: integer("csv_bytes"),
    json_sha256: text("json_sha256"),
    json_bytes: integer("json_bytes"),
    /** Migration 0027 (src/model/event-id.ts): the project's id tag when every id inside is located, else null. */
    id_tag: integer("id_tag"),
    first_id: text("first_id"),
  },
  (t) => [
    primaryKey({ columns: [t.project_id, t.first_seq] }),
    index("archive_segments_last_seq_idx").on(t.project_id, t.last_seq),
    index("archive_segments_received_idx").on(t.project_id, t.last_received_at),
    index("archive_segments_tag_idx").on(t.id_tag, t.last_received_at),
  ],
);

/**
 * The shard's index of archived event ids (event shards; migration 0011):
 * which project's event an id is and at which seq, so a lookup by id alone
 * (a public receipt) reads that project's one segment and nothing else
 * (src/storage/archive-ids.ts). The migration makes it WITHOUT ROWID (drizzle
 * cannot say so): the primary key is the row, and the id index its only copy.
 */
export const archiveIds = sqliteTable(
  "archive_ids",
  {
    project_id: text("project_id").notNull(),
    seq: integer("seq").notNull(),
    id: text("id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.project_id, t.seq] }), uniqueIndex("archive_ids_id_idx").on(t.id)],
);

/**
 * Per-segment summaries (event shards; migration 0019, which makes it WITHOUT
 * ROWID): a keyed Bloom filter of what a segment holds, valid while `sha256`
 * is the segment's (src/storage/archive-summary.ts).
 */
export const archiveSummaries = sqliteTable(
  "archive_summaries",
  {
    project_id: text("project_id").notNull(),
    first_seq: integer("first_seq").notNull(),
    sha256: text("sha256").notNull(),
    key_version: integer("key_version").notNull(),
    filter: text("filter").notNull(),
    mac: text("mac").notNull(),
  },
  (t) => [primaryKey({ columns: [t.project_id, t.first_seq] })],
);

/**
 * One row per commit (event shards; migration 0029, which makes it WITHOUT
 * ROWID and adds the trigger that deletes a span once none of its events is
 * left): the
 * seq range of the events a commit received at one instant, so an event whose
 * id carries that instant is found without an id index entry of its own
 * (src/model/event-lookup.ts).
 */
export const commitSpans = sqliteTable(
  "commit_spans",
  {
    received_at: text("received_at").notNull(),
    project_id: text("project_id").notNull(),
    first_seq: integer("first_seq").notNull(),
    last_seq: integer("last_seq").notNull(),
    /** The commit's appends by the names their workers gave them, [token, first_seq, last_seq] JSON (migration 0032; src/chain/landed-appends.ts). */
    appends: text("appends"),
    /** 1: its commit's live rows (events.time_in_span) are in time order through it, at received_at (migration 0040). */
    live: integer("live").notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.received_at, t.project_id, t.first_seq] }),
    // Unique, as the key is: SQLite then walks each span's rows in seq order without sorting them.
    uniqueIndex("commit_spans_live_time_idx").on(t.project_id, t.received_at, t.first_seq).where(sql`live = 1`),
  ],
);

/**
 * One row per run of three or more consecutive events of a project with one
 * ip_address (event shards; migration 0038, WITHOUT ROWID, with the triggers
 * that delete a run once none of its events holds the address): the run's
 * events have no entry in events_ip_time_idx, and a filter on the address
 * reads their seq range (src/model/event-query.ts). An event's address is its
 * ingest request's, so a batch is one run.
 */
export const ipRuns = sqliteTable(
  "ip_runs",
  {
    project_id: text("project_id").notNull(),
    ip: text("ip").notNull(),
    last_seq: integer("last_seq").notNull(),
    first_seq: integer("first_seq").notNull(),
  },
  (t) => [primaryKey({ columns: [t.project_id, t.ip, t.last_seq] })],
);

/**
 * One row per place (0: first target, 1: second) and target type that three
 * or more events of one batch share (event shards; migration 0039, WITHOUT
 * ROWID, with the trigger that deletes a set with the last of its events):
 * its seq range from the first of them to the last, and their seqs. Those
 * events have no entry in that place's type index, and a filter on the type reads them
 * (src/model/target-type-sets.ts, src/model/event-query.ts).
 */
export const targetTypeSets = sqliteTable(
  "target_type_sets",
  {
    project_id: text("project_id").notNull(),
    at: integer("at").notNull(),
    type: text("type").notNull(),
    last_seq: integer("last_seq").notNull(),
    first_seq: integer("first_seq").notNull(),
    /** How many rows it holds, and their seqs as a JSON array of offsets from first_seq (NULL: every seq of the range). */
    members: integer("members").notNull(),
    seqs: text("seqs"),
  },
  (t) => [primaryKey({ columns: [t.project_id, t.at, t.type, t.last_seq] })],
);

/**
 * One row per action that three or more live events of one commit share
 * (event shards; migration 0041, WITHOUT ROWID, with the trigger that
 * deletes a set with the last of its events): the commit's instant, the seq
 * of the first of them, the last, and their seqs. Those events have no
 * action index entry, and a filter on the action walks the sets in list
 * order (src/model/live-sets.ts, src/model/event-query.ts).
 */
export const actionSets = sqliteTable(
  "action_sets",
  {
    project_id: text("project_id").notNull(),
    action: text("action").notNull(),
    received_at: text("received_at").notNull(),
    first_seq: integer("first_seq").notNull(),
    last_seq: integer("last_seq").notNull(),
    /** The seqs of its rows, as a JSON array of offsets from first_seq. */
    seqs: text("seqs").notNull(),
  },
  (t) => [primaryKey({ columns: [t.project_id, t.action, t.received_at, t.first_seq] })],
);

/**
 * The same for organizations (event shards; migration 0042): one row per
 * organization that three or more live events of one commit share, and
 * those events have no organization index entry.
 */
export const organizationSets = sqliteTable(
  "organization_sets",
  {
    project_id: text("project_id").notNull(),
    organization: text("organization").notNull(),
    received_at: text("received_at").notNull(),
    first_seq: integer("first_seq").notNull(),
    last_seq: integer("last_seq").notNull(),
    /** The seqs of its rows, as a JSON array of offsets from first_seq. */
    seqs: text("seqs").notNull(),
  },
  (t) => [primaryKey({ columns: [t.project_id, t.organization, t.received_at, t.first_seq] })],
);

/**
 * The same for addresses (event shards; migration 0043): one row per address
 * that three or more live events of one commit share, in place of their
 * address runs (ip_run = 2 on those events).
 */
export const addressSets = sqliteTable(
  "address_sets",
  {
    project_id: text("project_id").notNull(),
    ip_address: text("ip_address").notNull(),
    received_at: text("received_at").notNull(),
    first_seq: integer("first_seq").notNull(),
    last_seq: integer("last_seq").notNull(),
    /** The seqs of its rows, as a JSON array of offsets from first_seq. */
    seqs: text("seqs").notNull(),
  },
  (t) => [primaryKey({ columns: [t.project_id, t.ip_address, t.received_at, t.first_seq] })],
);

/**
 * The projects whose rows carry an id tag (event shards; migration 0037,
 * WITHOUT ROWID): a public receipt names only the event, and a lone live
 * event (id_indexed = 2) is found in its project's time index, so the id's
 * tag names the projects to look in (src/model/event-lookup.ts).
 */
export const projectTags = sqliteTable(
  "project_tags",
  {
    tag: integer("tag").notNull(),
    project_id: text("project_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.tag, t.project_id] })],
);

/**
 * Each keyed project's number in this shard (event shards; migration 0045,
 * WITHOUT ROWID): its rows are at row_id = n x 2^40 + seq, found by seq
 * without an index entry (src/model/row-keys.ts). A project with no row here
 * has the older layout, the seq index.
 */
export const projectKeys = sqliteTable(
  "project_keys",
  {
    project_id: text("project_id").primaryKey(),
    n: integer("n").notNull(),
  },
  (t) => [uniqueIndex("project_keys_n_unique").on(t.n)],
);

/**
 * The shard's periods (event shards; migration 0048): each a copy of the
 * tables an event's rows live in, under its suffix, which every read of a
 * project's hot rows reads beside the main tables (src/model/periods.ts).
 */
export const periods = sqliteTable("periods", {
  n: integer("n").primaryKey(),
  made_at: text("made_at").notNull(),
  sealing_at: text("sealing_at"),
});

/**
 * The names of appends whose workers lost the ledger's answer and found no
 * commit holding them (event shards; migration 0034, WITHOUT ROWID, with the
 * trigger that refuses a later commit naming one): a row per failed call,
 * none per commit (src/chain/landed-appends.ts).
 */
export const givenUpAppends = sqliteTable("given_up_appends", {
  token: text("token").primaryKey(),
  given_up_at: text("given_up_at").notNull(),
}, (t) => [index("given_up_appends_at_idx").on(t.given_up_at)]);

/**
 * A project whose ledger answers appends before D1 has their rows, because
 * its shard lags (event shards; migration 0047, WITHOUT ROWID): one row a
 * backlog episode, which every read of the project's events reads in the same
 * batch as its rows (src/chain/commit-backlog.ts, src/storage/own-writes.ts).
 */
export const ingestBacklog = sqliteTable("ingest_backlog", {
  project_id: text("project_id").primaryKey(),
  since: text("since").notNull(),
  /** The project's id tag (src/model/event-id.ts): a public receipt's look finds the project by it. */
  tag: integer("tag").notNull(),
});

/**
 * A project that has committed to the main tables (event shards; migration
 * 0049, WITHOUT ROWID): written in the batch of every such commit, so a read
 * that finds none may take the main tables for a settled arm of the project
 * (src/model/periods.ts, armSpans; src/storage/own-writes.ts).
 */
export const mainCommits = sqliteTable("main_commits", {
  project_id: text("project_id").primaryKey(),
});

/**
 * The lowest occurred_at among a project's rows committed to a period
 * (event shards; migration 0050, WITHOUT ROWID): written in the batch of
 * every commit there when it lowers it, so a read may skip a growing period
 * that holds nothing at or below where its page starts (src/model/periods.ts,
 * armSpans; src/storage/own-writes.ts). Dropped with the period.
 */
export const periodLows = sqliteTable(
  "period_lows",
  {
    project_id: text("project_id").notNull(),
    period: integer("period").notNull(),
    lo: text("lo").notNull(),
  },
  (t) => [primaryKey({ columns: [t.project_id, t.period] })],
);

/** An event as the chain knows it; id_indexed and the search columns are storage's concern (event-insert.ts), not the event's. */
export type EventRow = Omit<typeof events.$inferSelect, "id_indexed" | "search_lead" | "search_words" | "append_name" | "ip_run" | "type_sets" | "time_in_span" | "action_in_set" | "org_in_set">;

/**
 * Jobs (event shards; migrations 0013, 0020): one per export or verify run as a
 * Cloudflare Workflow (src/jobs/). The record lives with the project's events.
 * params, state, files, result and error are JSON text; files_expire_at is
 * when a finished job's files are deleted by the daily sweep.
 */
export const jobs = sqliteTable(
  "jobs",
  {
    id: text("id").primaryKey(),
    project_id: text("project_id").notNull(),
    type: text("type").notNull(),
    status: text("status").notNull(),
    params: text("params").notNull(),
    progress_done: integer("progress_done").notNull().default(0),
    progress_total: integer("progress_total").notNull().default(0),
    state: text("state"),
    files: text("files").notNull().default("[]"),
    result: text("result"),
    error: text("error"),
    created_at: text("created_at").notNull(),
    updated_at: text("updated_at").notNull(),
    files_expire_at: text("files_expire_at"),
    files_expired: integer("files_expired").notNull().default(0),
    /** The prefix of the API key that created it (migration 0020); NULL before then and for erasures' jobs. */
    created_by: text("created_by"),
    /** The strongest scope that key held (read or admin): what canceling or deleting the job needs, unless it is the same key. */
    created_by_scope: text("created_by_scope"),
  },
  (t) => [
    index("jobs_project_created_idx").on(t.project_id, t.created_at, t.id),
    index("jobs_files_expire_idx").on(t.files_expire_at),
    // Only live jobs: what POST /v1/jobs counts against JOB_MAX_RUNNING, and what the cron checks for lost instances.
    index("jobs_live_idx").on(t.project_id, t.type).where(sql`status IN ('queued', 'running')`),
    index("jobs_live_updated_idx").on(t.updated_at).where(sql`status IN ('queued', 'running')`),
  ],
);

export type JobRow = typeof jobs.$inferSelect;
