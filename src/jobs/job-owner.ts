import { grants, type Scope } from "../auth/scopes";
import { recordAdminAction, type AuditActor, type AuditOrigin } from "../chain/self-audit";
import type { Job, JobCreator } from "./job-store";

/**
 * Who may stop a job. Reading a job and its files needs read, like every
 * read; canceling one or deleting its files destroys work someone else may
 * count on (an admin's evidence export kept for an auditor), so it needs the
 * scope of the key that created the job, or that same key. A job made before
 * creators were recorded needs admin: nothing tells an admin's export apart
 * from a read key's, and a wrong guess towards read would hand any read key
 * the admin's files. Each stop of an export job (the jobs with files) is
 * recorded in the project's chain.
 */
export function creatorOf(key: { prefix: string; scopes: readonly Scope[] }): JobCreator {
  return { key: key.prefix, scope: grants(key.scopes, "admin") ? "admin" : "read" };
}

/** Why this key may not cancel or delete the job (the scope it would need); null when it may. */
export function stopRefusal(key: { prefix: string; scopes: readonly Scope[] }, job: Job): { scope: Scope; message: string } | null {
  if (job.createdBy?.key === key.prefix) return null;
  const scope: Scope = job.createdBy?.scope ?? "admin";
  if (grants(key.scopes, scope)) return null;
  const message = job.createdBy
    ? `This job was created by a key with the ${scope} scope: canceling or deleting it needs that scope or the key that created it (this key holds: ${key.scopes.join(", ") || "none"})`
    : `This job was created before jobs recorded who created them: canceling or deleting it needs the admin scope (this key holds: ${key.scopes.join(", ") || "none"})`;
  return { scope, message };
}

/**
 * What a DELETE of the job does that the chain must show: canceled (it was
 * queued or running: it stops and its files go), deleted (finished, its files
 * go), or null (a verify, which has no files, or files already gone).
 */
export function stopKind(job: Job): "canceled" | "deleted" | null {
  if (job.type !== "export") return null;
  if (job.status === "queued" || job.status === "running") return "canceled";
  return job.filesExpired ? null : "deleted";
}

/**
 * witness.job.canceled / witness.job.deleted, before anything is deleted, so
 * no file goes unrecorded (a failure after it at worst records a stop twice
 * on retry). What was stopped, never the export's filters: they may name a
 * person, and the chain keeps what it is given for good.
 */
export function recordJobStop(env: Env, job: Job, kind: "canceled" | "deleted", actor: AuditActor, origin: AuditOrigin): Promise<string> {
  const params = job.params as { format?: string; evidence?: boolean };
  return recordAdminAction(
    env,
    job.projectId,
    {
      action: `witness.job.${kind}`,
      actor,
      targets: [{ type: "job", id: job.id }],
      metadata: {
        type: job.type,
        status: job.status,
        format: params.format ?? null,
        evidence: params.evidence === true,
        files: job.files.length,
        rows: job.files.reduce((n, f) => n + f.rows, 0),
        bytes: job.files.reduce((n, f) => n + f.bytes, 0),
        created_at: job.createdAt,
        created_by: job.createdBy?.key ?? null,
        created_by_scope: job.createdBy?.scope ?? null,
      },
    },
    origin,
  );
}
