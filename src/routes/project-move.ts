import { createRoute, z } from "@hono/zod-openapi";
import { ledgerOf } from "../chain/ledger";
import { recordAdminAction } from "../chain/self-audit";
import { ApiError } from "../lib/errors";
import { AUTH_ERRORS, documented, errors, json, router } from "../middleware/openapi";
import { readJsonObject } from "../lib/request-body";
import { toIssues, validationError } from "../lib/validate";
import { access, auditActor, projectOf } from "../middleware/credential";
import type { MoveProgress } from "../storage/shard-move";
import { requestContext } from "../middleware/ingest";

/**
 * POST /v1/project/move {shard}: runs the project's shard move for up to a
 * couple of seconds and reports where it is. The API key only drives a move
 * an operator already requested by writing projects.move_to in the control
 * database (npm run projects:move does both): a key holder can neither start
 * one nor choose the shard. Driven through the worker because an operator
 * script cannot call the project's ledger, the move's only safe executor.
 * The step that completes a move is recorded in the project's chain as
 * witness.project.moved.
 */
const projectMove = router();
const ADMIN = access("admin");
const moveSchema = z.object({ shard: z.number("shard must be a number").int("shard must be a whole number").min(0, "shard must be 0 or more") });
const progressSchema = z
  .object({
    data: z.object({
      status: z.enum(["clearing", "copying", "draining", "deleting", "done"]),
      from: z.number().int(),
      to: z.number().int(),
      copiedThrough: z.number().int().meta({ description: "Events are copied up to this seq" }),
      head: z.number().int().meta({ description: "The project's chain head" }),
      waitSeconds: z.number().int().optional().meta({ description: "draining: seconds before the ledger deletes the old copy (on its own)" }),
      switched: z.literal(true).optional().meta({ description: "This call switched the project to the new shard: the move is done for readers and writers" }),
      message: z.string().optional(),
    }),
  })
  .meta({ id: "ProjectMoveProgress" });

documented(projectMove, createRoute({
  method: "post", path: "/move", tags: ["Operations"], operationId: "moveProject", security: ADMIN.security,
  summary: "Drive a shard move an operator requested (npm run projects:move)",
  description:
    "The call whose step switches the project to the new shard records the move in the project's chain as witness.project.moved (from_shard, to_shard); " +
    "the ledger then deletes the old copy on its own (draining, then deleting), and calling again shows that progress.",
  request: { body: { required: true, content: { "application/json": { schema: moveSchema.meta({ id: "ProjectMove" }) } } } },
  responses: {
    200: json(progressSchema, "Where the move stands; call again until status is done"),
    ...errors(...AUTH_ERRORS, "VALIDATION_ERROR", "UNSUPPORTED_MEDIA_TYPE", "EVENT_TOO_LARGE"),
  },
}));

/** Long enough for many batches per request, short enough to report progress often. */
const STEP_BUDGET_MS = 2000;

projectMove.post("/move", ADMIN.guard, async (c) => {
  const parsed = moveSchema.safeParse(await readJsonObject(c));
  if (!parsed.success) throw validationError(toIssues(parsed.error));
  const projectId = projectOf(c.get("credential"));
  const ledger = ledgerOf(c.env, projectId);
  const started = Date.now();
  let progress: MoveProgress;
  do progress = await ledger.moveShard(parsed.data.shard);
  while (["clearing", "copying", "deleting"].includes(progress.status) && Date.now() - started < STEP_BUDGET_MS);
  if (progress.status === "not_requested") throw new ApiError("FORBIDDEN", progress.message ?? "No such move was requested");
  if (progress.status === "unknown_shard" || progress.status === "busy") throw new ApiError("VALIDATION_ERROR", progress.message ?? "Bad shard", { field: "shard" });
  // The step that switched the project to its new shard is the move (the ledger deletes the old
  // copy on its own afterwards): that call records it, once. Recorded after the step: a crash in
  // between leaves the move unrecorded (the data is safe either way).
  if (progress.switched) {
    await recordAdminAction(c.env, projectId, {
      action: "witness.project.moved",
      actor: auditActor(c.get("credential")),
      targets: [{ type: "project", id: projectId }],
      metadata: { from_shard: progress.from, to_shard: progress.to },
    }, requestContext(c.req.raw));
  }
  return c.json({ data: progress });
});

export default projectMove;
