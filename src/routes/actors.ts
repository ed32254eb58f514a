import { createRoute } from "@hono/zod-openapi";
import { ledgerOf } from "../chain/ledger";
import { validate } from "../lib/validate";
import { projectOf, requireCredential } from "../middleware/credential";
import { actorParamSchema, erasureQuerySchema } from "../schemas/actors";
import { API_KEY, AUTH_ERRORS, documented, errors, json, router } from "../lib/openapi";
import { erasureSchema } from "../schemas/responses";

const actors = router();

documented(actors, createRoute({
  method: "delete", path: "/{id}", tags: ["Actors"], operationId: "eraseActor", summary: "Erase one actor's personal data",
  description: "Anonymizes the actor's events in place and records a signed erasure; verify stays ok. `by=email` names an actor sent without an id.",
  security: API_KEY,
  request: { params: actorParamSchema, query: erasureQuerySchema },
  responses: { 200: json(erasureSchema, "What was erased"), ...errors(...AUTH_ERRORS, "VALIDATION_ERROR") },
}));

/**
 * Erasure of one actor's personal data, through the project's ledger (it
 * rewrites chain rows and records the erasure). `?by=email` names the actor by
 * e-mail, for actors sent without an id; the answer has the same shape.
 */
actors.delete(
  "/:id",
  requireCredential({ allowEmbed: false }),
  validate("param", actorParamSchema),
  validate("query", erasureQuerySchema),
  async (c) => {
    const projectId = projectOf(c.get("credential"));
    const { id } = c.req.valid("param");
    const { by, organization = null } = c.req.valid("query");
    const anonymized = await ledgerOf(c.env, projectId).erase({ by, value: id, organization });
    return c.json({ data: { actor_id: id, by, organization, anonymized } });
  },
);

export default actors;
