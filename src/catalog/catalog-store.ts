import type { SchemaDocument } from "./schema-document";

/**
 * Where a project's catalog lives: in its ledger's own SQLite storage, beside
 * the head, so the ledger that commits an event is also the one that says
 * which schema version was current when the event was checked (the
 * `revision`, bumped by every change, is what ingest compares). Versions are
 * immutable: a PUT adds the next one. Schemas are few and read rarely, so
 * reads come from here too rather than from a D1 copy that could drift.
 */

export const CATALOG_MODES = ["off", "warn", "enforce"] as const;
export const UNKNOWN_ACTIONS = ["allow", "reject"] as const;

export interface CatalogSettings {
  mode: (typeof CATALOG_MODES)[number];
  unknown_actions: (typeof UNKNOWN_ACTIONS)[number];
}

export const DEFAULT_SETTINGS: CatalogSettings = { mode: "off", unknown_actions: "allow" };

export interface StoredSchema {
  action: string;
  version: number;
  document: SchemaDocument;
  /** SHA-256 of the document's canonical JSON, as the chain's witness.schema.changed event records it. */
  sha256: string;
  created_at: string;
  /** The admin key's prefix, or "operator". */
  created_by: string;
}

/** What the worker caches to check events and render sentences: the newest version of each action, and the settings. */
export interface CatalogSnapshot {
  revision: number;
  settings: CatalogSettings;
  schemas: StoredSchema[];
}

export interface VersionInfo {
  version: number;
  sha256: string;
  created_at: string;
  created_by: string;
}

/** At most this many actions may have a schema: the worker holds every newest version in memory. */
export const MAX_SCHEMAS = 1000;

interface SchemaRow extends Record<string, SqlStorageValue> {
  action: string;
  version: number;
  document: string;
  sha256: string;
  created_at: string;
  created_by: string;
}

const NEWEST = "version = (SELECT max(version) FROM catalog_schemas n WHERE n.action = s.action)";

function stored(row: SchemaRow): StoredSchema {
  return { ...row, document: JSON.parse(row.document) as SchemaDocument };
}

export class CatalogStore {
  constructor(
    private readonly sql: SqlStorage,
    private readonly kv: SyncKvStorage,
  ) {
    sql.exec(
      "CREATE TABLE IF NOT EXISTS catalog_schemas (action TEXT NOT NULL, version INTEGER NOT NULL, document TEXT NOT NULL, " +
        "sha256 TEXT NOT NULL, created_at TEXT NOT NULL, created_by TEXT NOT NULL, PRIMARY KEY (action, version))",
    );
  }

  /** 0 until the catalog is first changed: a project that never set it up checks nothing. */
  revision(): number {
    return this.kv.get<number>("catalog_revision") ?? 0;
  }

  settings(): CatalogSettings {
    return this.kv.get<CatalogSettings>("catalog_settings") ?? DEFAULT_SETTINGS;
  }

  snapshot(): CatalogSnapshot {
    const schemas = this.sql.exec<SchemaRow>(`SELECT * FROM catalog_schemas s WHERE ${NEWEST} ORDER BY action`).toArray().map(stored);
    return { revision: this.revision(), settings: this.settings(), schemas };
  }

  /** The newest version of each action after `after`, in action order. */
  list(after: string | null, limit: number): StoredSchema[] {
    return this.sql
      .exec<SchemaRow>(`SELECT * FROM catalog_schemas s WHERE ${NEWEST} AND action > ? ORDER BY action LIMIT ?`, after ?? "", limit)
      .toArray()
      .map(stored);
  }

  get(action: string, version?: number): StoredSchema | null {
    const rows =
      version === undefined
        ? this.sql.exec<SchemaRow>("SELECT * FROM catalog_schemas WHERE action = ? ORDER BY version DESC LIMIT 1", action).toArray()
        : this.sql.exec<SchemaRow>("SELECT * FROM catalog_schemas WHERE action = ? AND version = ?", action, version).toArray();
    return rows[0] ? stored(rows[0]) : null;
  }

  versions(action: string): VersionInfo[] {
    return this.sql
      .exec<VersionInfo & Record<string, SqlStorageValue>>("SELECT version, sha256, created_at, created_by FROM catalog_schemas WHERE action = ? ORDER BY version", action)
      .toArray()
      .map((v) => ({ ...v }));
  }

  /** The newest version of each of these actions, for GET /v1/actions. */
  newestVersions(actions: string[]): Map<string, number> {
    if (actions.length === 0) return new Map();
    const rows = this.sql.exec<{ action: string; version: number }>(
      "SELECT action, max(version) AS version FROM catalog_schemas WHERE action IN (SELECT value FROM json_each(?)) GROUP BY action",
      JSON.stringify(actions),
    );
    return new Map([...rows].map((r) => [r.action, r.version]));
  }

  count(): number {
    return this.sql.exec<{ n: number }>("SELECT count(DISTINCT action) AS n FROM catalog_schemas").one().n;
  }

  /**
   * Adds the action's next version. Synchronous, so the caller runs it in the
   * storage transaction that also stages its self-audit event.
   */
  add(action: string, document: SchemaDocument, sha256: string, createdBy: string): StoredSchema {
    const version = (this.sql.exec<{ v: number | null }>("SELECT max(version) AS v FROM catalog_schemas WHERE action = ?", action).one().v ?? 0) + 1;
    const row: SchemaRow = { action, version, document: JSON.stringify(document), sha256, created_at: new Date().toISOString(), created_by: createdBy };
    this.sql.exec(
      "INSERT INTO catalog_schemas (action, version, document, sha256, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?)",
      row.action, row.version, row.document, row.sha256, row.created_at, row.created_by,
    );
    this.bump();
    return stored(row);
  }

  /** Synchronous, like add. */
  setSettings(settings: CatalogSettings): void {
    this.kv.put("catalog_settings", settings);
    this.bump();
  }

  private bump(): void {
    this.kv.put("catalog_revision", this.revision() + 1);
  }
}
