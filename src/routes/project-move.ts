import { createRoute, z } from "@hono/zod-openapi";
import { ledgerOf } from "../chain/ledger";
import { ApiError } from "../lib/errors";
import { API_KEY, AUTH_ERRORS, documented, errors, json, router } from "../lib/openapi";
import { readJsonObject } from "../lib/request-body";
import { toIssues, validationError } from "../lib/validate";
import { projectOf, requireCredential } from "../middleware/credential";
import type { MoveProgress } from "../storage/shard-move";

/**
 * POST /v1/project/move {shard}: runs the project's shard move for up to a
 * couple of seconds and reports where it is. The API key only drives a move
 * an operator already requested by writing projects.move_to in the control
 * database (npm run projects:move does both): a key holder can neither start
 * one nor choose the shard. Driven through the worker because an operator
 * script cannot call the project's ledger, the move's only safe executor.
 */
const projectMove = router();
const moveSchema = z.object({ shard: z.number("shard must be a number").int("shard must be a whole number").min(0, "shard must be 0 or more") });
const progressSchema = z
  .object({
    data: z.object({
      status: z.enum(["clearing", "copying", "draining", "deleting", "done"]),
      from: z.number().int(),
      to: z.number().int(),
      copiedThrough: z.number().int().meta({ description: "Events are copied up to this seq" }),
      head: z.number().int().meta({ description: "The project's chain head" }),
      waitSeconds: z.number().int().optional().meta({ description: "draining: seconds before the old copy may be deleted; call again then" }),
      message: z.string().optional(),
    }),
  })
  .meta({ id: "ProjectMoveProgress" });

documented(projectMove, createRoute({
  method: "post", path: "/move", tags: ["Operations"], operationId: "moveProject", security: API_KEY,
  summary: "Drive a shard move an operator requested (npm run projects:move)",
  request: { body: { required: true, content: { "application/json": { schema: moveSchema.meta({ id: "ProjectMove" }) } } } },
  responses: {
    200: json(progressSchema, "Where the move stands; call again until status is done"),
    ...errors(...AUTH_ERRORS, "VALIDATION_ERROR", "UNSUPPORTED_MEDIA_TYPE", "EVENT_TOO_LARGE"),
  },
}));

/** Long enough for many batches per request, short enough to report progress often. */
const STEP_BUDGET_MS = 2000;

projectMove.post("/move", requireCredential({ allowEmbed: false }), async (c) => {
  const parsed = moveSchema.safeParse(await readJsonObject(c));
  if (!parsed.success) throw validationError(toIssues(parsed.error));
  const ledger = ledgerOf(c.env, projectOf(c.get("credential")));
  const started = Date.now();
  let progress: MoveProgress;
  do progress = await ledger.moveShard(parsed.data.shard);
  while (["clearing", "copying", "deleting"].includes(progress.status) && Date.now() - started < STEP_BUDGET_MS);
  if (progress.status === "not_requested") throw new ApiError("FORBIDDEN", progress.message ?? "No such move was requested");
  if (progress.status === "unknown_shard" || progress.status === "busy") throw new ApiError("VALIDATION_ERROR", progress.message ?? "Bad shard", { field: "shard" });
  return c.json({ data: progress });
});

export default projectMove;
