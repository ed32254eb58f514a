import { Hono } from "hono";
import { ledgerOf } from "../chain/ledger";
import { validate } from "../lib/validate";
import { projectOf, requireCredential } from "../middleware/credential";
import { actorParamSchema, erasureQuerySchema } from "../schemas/actors";
import type { AppEnv } from "../types";

const actors = new Hono<AppEnv>();

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
