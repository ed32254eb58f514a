import { addSchemaVersion, changeCatalogSettings } from "../chain/catalog-changes";
import type { AuditActor, AuditOrigin } from "../chain/self-audit";
import type { CatalogSettings, CatalogSnapshot, StoredSchema, VersionInfo } from "../catalog/catalog-store";
import type { SchemaDocument } from "../catalog/schema-document";
import { LedgerChainRpc } from "./ledger-chain-rpc";

/**
 * The ledger's RPC facet for the action catalog (src/catalog/): the snapshot
 * ingest checks against, schema reads, and the two changes, each self-audited
 * under the commit lock so no append is checked against a half-made change.
 */
export abstract class LedgerCatalogRpc extends LedgerChainRpc {
  catalogSnapshot(): CatalogSnapshot {
    return this.catalog.snapshot();
  }

  catalogSettings(): CatalogSettings {
    return this.catalog.settings();
  }

  schemaList(after: string | null, limit: number): StoredSchema[] {
    return this.catalog.list(after, limit);
  }

  schemaVersion(action: string, version?: number): StoredSchema | null {
    return this.catalog.get(action, version);
  }

  schemaVersions(action: string): VersionInfo[] {
    return this.catalog.versions(action);
  }

  putSchema(action: string, document: SchemaDocument, by: AuditActor, origin: AuditOrigin): Promise<StoredSchema | "too_many"> {
    return this.audited(() => addSchemaVersion(this.ctx.storage, this.catalog, this.audit, { action, document }, by, origin));
  }

  putCatalogSettings(settings: CatalogSettings, by: AuditActor, origin: AuditOrigin): Promise<{ settings: CatalogSettings; changed: boolean }> {
    return this.audited(async () => changeCatalogSettings(this.ctx.storage, this.catalog, this.audit, settings, by, origin));
  }
}
