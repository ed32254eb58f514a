import { createRoute } from "@hono/zod-openapi";
import { ledgerOf } from "../chain/ledger";
import { ApiError } from "../lib/errors";
import { validate } from "../lib/validate";
import { access, auditActor, projectOf } from "../middleware/credential";
import { actorParamSchema, erasureQuerySchema } from "../schemas/actors";
import { AUTH_ERRORS, documented, errors, json, router } from "../lib/openapi";
import { erasureSchema } from "../schemas/responses";
import { requestContext } from "./ingest";

const actors = router();
const ADMIN = access("admin");

documented(actors, createRoute({
  method: "delete", path: "/{id}", tags: ["Actors"], operationId: "eraseActor", summary: "Erase one actor's personal data",
  description:
    "Anonymizes the actor's events in place and records a signed erasure; verify stays ok. `by=email` names an actor sent without an id. " +
    "409 LEGAL_HOLD, changing nothing, when a legal hold covers any of those events. Recorded in the chain as witness.actor.erased, without the actor's personal data.",
  security: ADMIN.security,
  request: { params: actorParamSchema, query: erasureQuerySchema },
  responses: { 200: json(erasureSchema, "What was erased"), ...errors(...AUTH_ERRORS, "VALIDATION_ERROR", "LEGAL_HOLD") },
}));

/**
 * Erasure of one actor's personal data, through the project's ledger (it
 * rewrites chain rows and records the erasure). `?by=email` names the actor by
 * e-mail, for actors sent without an id; the answer has the same shape.
 */
actors.delete(
  "/:id",
  ADMIN.guard,
  validate("param", actorParamSchema),
  validate("query", erasureQuerySchema),
  async (c) => {
    const credential = c.get("credential");
    const { id } = c.req.valid("param");
    const { by, organization = null } = c.req.valid("query");
    const outcome = await ledgerOf(c.env, projectOf(credential)).erase({ by, value: id, organization }, auditActor(credential), requestContext(c.req.raw));
    if (outcome.status === "held") {
      throw new ApiError("LEGAL_HOLD", `A legal hold covers events of this actor (${outcome.holds.join(", ")}); nothing was erased`, { holds: outcome.holds });
    }
    return c.json({ data: { actor_id: id, by, organization, anonymized: outcome.anonymized } });
  },
);

export default actors;
