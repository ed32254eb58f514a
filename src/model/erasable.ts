/**
 * What an erasure may touch. Witness's own records of admin acts (actions
 * `witness.<noun>.<verb>`, src/chain/self-audit.ts) name an API key or an
 * operator script, never a person; were they erasable, an admin could erase
 * who did every admin act (their own included) and verify would still pass.
 * So every place that picks rows for an erasure (the job's scrubs, hot and
 * archived, the holds it checks, the reads that apply it while it is pending)
 * asks this module, and nowhere else spells the rule.
 * Ingest refuses the prefix (src/schemas/event.ts), so no application key can
 * write such a record.
 */
export const SELF_AUDIT_PREFIX = "witness.";

/**
 * SQL: the row (column `action` of the given table alias) is not a self-audit
 * record. substr rather than LIKE: an exact prefix, no wildcard or escape to
 * get wrong, and no collation (LIKE ignores ASCII case, 'Witness.' would match).
 */
export function erasableSql(alias?: string): string {
  const action = alias ? `${alias}.action` : "action";
  return `substr(${action}, 1, ${SELF_AUDIT_PREFIX.length}) <> '${SELF_AUDIT_PREFIX}'`;
}

/** The same rule for rows held in memory (archived rows, rows read without the SQL rule). */
export function isErasable(action: string): boolean {
  return !action.startsWith(SELF_AUDIT_PREFIX);
}
