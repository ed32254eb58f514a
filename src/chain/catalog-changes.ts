import { canonicalize } from "../sealing/canonical";
import { sha256Hex } from "../lib/crypto";
import { MAX_SCHEMAS, type CatalogSettings, type CatalogStore, type StoredSchema } from "../catalog/catalog-store";
import type { SchemaDocument } from "../catalog/schema-document";
import type { AuditOutbox } from "./audit-outbox";
import { auditEvent, type AuditActor, type AuditOrigin } from "./self-audit";

/**
 * Changes to a project's action catalog (src/catalog/), made by its ledger:
 * each is stored and its self-audit event staged in one storage transaction,
 * so the chain records every schema version and every change of validation
 * mode (witness.schema.changed, witness.catalog.changed) and no change goes
 * unrecorded. The schema event carries the document's SHA-256: anyone holding
 * a version can prove it is the one the chain recorded.
 */

export async function addSchemaVersion(
  storage: DurableObjectStorage,
  catalog: CatalogStore,
  outbox: AuditOutbox,
  change: { action: string; document: SchemaDocument },
  by: AuditActor,
  origin: AuditOrigin,
): Promise<StoredSchema | "too_many"> {
  const sha256 = await sha256Hex(canonicalize(change.document));
  return storage.transactionSync(() => {
    if (catalog.get(change.action) === null && catalog.count() >= MAX_SCHEMAS) return "too_many" as const;
    const schema = catalog.add(change.action, change.document, sha256, by.id);
    outbox.stage(
      auditEvent(
        {
          action: "witness.schema.changed",
          actor: by,
          targets: [{ type: "action", id: change.action }],
          metadata: { action: change.action, version: schema.version, sha256 },
        },
        origin,
      ),
    );
    return schema;
  });
}

export function changeCatalogSettings(
  storage: DurableObjectStorage,
  catalog: CatalogStore,
  outbox: AuditOutbox,
  settings: CatalogSettings,
  by: AuditActor,
  origin: AuditOrigin,
): { settings: CatalogSettings; changed: boolean } {
  return storage.transactionSync(() => {
    const before = catalog.settings();
    if (before.mode === settings.mode && before.unknown_actions === settings.unknown_actions) return { settings, changed: false };
    catalog.setSettings(settings);
    outbox.stage(auditEvent({ action: "witness.catalog.changed", actor: by, metadata: { before, after: settings } }, origin));
    return { settings, changed: true };
  });
}
