import { createRoute, z } from "@hono/zod-openapi";
import { ledgerOf } from "../chain/ledger";
import { recordAdminAction } from "../chain/self-audit";
import { ApiError } from "../lib/errors";
import { AUTH_ERRORS, documented, errors, json, router } from "../middleware/openapi";
import { access, auditActor, projectOf } from "../middleware/credential";
import { requestContext } from "../middleware/ingest";

/**
 * POST /v1/project/restore-archive: brings the project's archived events back
 * into D1, a segment at a time, for up to a couple of seconds a call (npm run
 * projects:tiering -- <project> off --restore drives it until done). Admin:
 * it changes where the history lives. Each call that restored anything is
 * recorded in the chain as witness.archive.restored.
 */
const projectRestore = router();
const ADMIN = access("admin");
/** How long a call restores before it answers "restoring" (tests that count one call's record lift it). */
export const restoreTuning = { budgetMs: 2000 };

const restoreSchema = z
  .object({
    data: z.object({
      status: z.enum(["restoring", "done"]),
      restored: z.number().int().meta({ description: "Events this call brought back into D1" }),
      remaining: z.number().int().meta({ description: "Archived segments still to restore" }),
    }),
  })
  .meta({ id: "ArchiveRestoreProgress" });

documented(projectRestore, createRoute({
  method: "post", path: "/restore-archive", tags: ["Operations"], operationId: "restoreArchive", security: ADMIN.security,
  summary: "Bring archived events back into D1 (tiering off)",
  description: "Restores the newest archived segments for up to about two seconds; call again until status is done. 409 CONFLICT while the project keeps a hot window or its shard is past 80% of its high-water mark.",
  responses: { 200: json(restoreSchema, "Where the restore stands"), ...errors(...AUTH_ERRORS, "CONFLICT") },
}));
projectRestore.post("/restore-archive", ADMIN.guard, async (c) => {
  const credential = c.get("credential")!;
  const projectId = projectOf(credential);
  const ledger = ledgerOf(c.env, projectId);
  const started = Date.now();
  let restored = 0;
  let remaining = 0;
  for (;;) {
    const step = await ledger.restoreArchived();
    if (step.status === "refused") {
      if (restored > 0) break;
      throw new ApiError("CONFLICT", step.message);
    }
    restored += step.events;
    remaining = step.remaining;
    if (step.status === "done" || remaining === 0 || Date.now() - started > restoreTuning.budgetMs) break;
  }
  if (restored > 0) {
    await recordAdminAction(c.env, projectId, {
      action: "witness.archive.restored",
      actor: auditActor(credential),
      targets: [{ type: "project", id: projectId }],
      metadata: { events: restored, segments_remaining: remaining },
    }, requestContext(c.req.raw));
  }
  return c.json({ data: { status: remaining === 0 ? ("done" as const) : ("restoring" as const), restored, remaining } }, 200);
});

export default projectRestore;
