import { createRoute } from "@hono/zod-openapi";
import { ledgerOf } from "../chain/ledger";
import { ApiError } from "../lib/errors";
import { validate, validationError } from "../lib/validate";
import { access, auditActor, projectOf } from "../middleware/credential";
import { startErasureJob } from "../jobs/erasure-job";
import { actorErasuresSchema, actorParamSchema, erasureAcceptedSchema, erasureLookupQuerySchema, erasureQuerySchema } from "../schemas/actors";
import { AUTH_ERRORS, documented, errors, json, router } from "../middleware/openapi";
import { requestContext } from "../middleware/ingest";

const actors = router();
const ADMIN = access("admin");
const READ = access("read");

documented(actors, createRoute({
  method: "delete", path: "/{id}", tags: ["Actors"], operationId: "eraseActor", summary: "Erase one actor's personal data",
  description:
    "Anonymizes the actor's events and records a signed erasure; verify stays ok. `by=email` names an actor sent without an id. " +
    "Answers at once (202): from then on every read (list, search, get, exports, receipts, streams) leaves the actor's personal data out, and a job " +
    "(GET /v1/jobs/<job_id>) scrubs the stored events, hot and archived, in bounded steps while ingest goes on. Events appended after the answer are not covered. " +
    "409 LEGAL_HOLD, changing nothing, when a legal hold covers any of those events. Recorded in the chain as witness.actor.erased, without the actor's personal data. " +
    "Witness's own records of admin acts (actions starting with `witness.`) are never anonymized: they name API keys and sessions, not people. " +
    "So 400 VALIDATION_ERROR, changing nothing, when the id is the caller's own key prefix, or when only such records name it.",
  security: ADMIN.security,
  request: { params: actorParamSchema, query: erasureQuerySchema },
  responses: { 202: json(erasureAcceptedSchema, "Accepted, and being applied"), ...errors(...AUTH_ERRORS, "VALIDATION_ERROR", "LEGAL_HOLD") },
}));

/** Why an id that names an API key is refused: an admin must not be able to erase who did the admin acts. */
const NOT_A_PERSON = "self-audit records name API keys and sessions, not people, and are never erased";

/**
 * Erasure of one actor's personal data, through the project's ledger (it
 * records the erasure and its job rewrites chain rows). `?by=email` names the
 * actor by e-mail, for actors sent without an id; the answer has the same shape.
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
    const actor = auditActor(credential);
    if (by === "id" && id === actor.id) throw validationError([{ path: "id", message: `this is the prefix of the API key making the request; ${NOT_A_PERSON}` }]);
    const outcome = await ledgerOf(c.env, projectOf(credential)).erase({ by, value: id, organization }, actor, requestContext(c.req.raw));
    if (outcome.status === "self_audit_only") {
      throw validationError([{ path: "id", message: `only Witness's own records of admin acts (witness.*) have this actor id; ${NOT_A_PERSON}` }]);
    }
    if (outcome.status === "held") {
      throw new ApiError("LEGAL_HOLD", `A legal hold covers events of this actor (${outcome.holds.join(", ")}); nothing was erased`, { holds: outcome.holds });
    }
    // Not awaited (as POST /v1/jobs): a job whose instance never started is resumed from its record (src/jobs/job-resume.ts).
    c.executionCtx.waitUntil(startErasureJob(c.env, projectOf(credential), outcome.job_id).catch((error: unknown) => console.warn(`erasure job ${outcome.job_id}: start: ${error}`)));
    return c.json({ data: { actor_id: id, by, organization, status: outcome.status, erasure_id: outcome.erasure_id, job_id: outcome.job_id } }, 202);
  },
);

documented(actors, createRoute({
  method: "get", path: "/{id}/erasures", tags: ["Actors"], operationId: "listActorErasures", summary: "The erasures of one actor",
  description:
    "The erasures recorded for this actor id (`by=email`: this e-mail), oldest first; an empty list when there are none. " +
    "Erased events no longer carry the id, so this is how a reader tells an erased actor from one that never had events. " +
    "Erasure records keep only a SHA-256 of the id, so only the exact id (letter case included) finds them.",
  security: READ.security,
  request: { params: actorParamSchema, query: erasureLookupQuerySchema },
  responses: { 200: json(actorErasuresSchema, "The actor's erasures"), ...errors(...AUTH_ERRORS, "VALIDATION_ERROR") },
}));

actors.get("/:id/erasures", READ.guard, validate("param", actorParamSchema), validate("query", erasureLookupQuerySchema), async (c) => {
  const { id } = c.req.valid("param");
  const { by } = c.req.valid("query");
  const data = await ledgerOf(c.env, projectOf(c.get("credential"))).erasuresOf(by, id);
  return c.json({ data }, 200);
});

export default actors;
