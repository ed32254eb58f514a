import { Hono } from "hono";
import { ledgerOf } from "../chain/ledger";
import { validate } from "../lib/validate";
import { projectOf, requireCredential } from "../middleware/credential";
import { actorParamSchema, erasureQuerySchema } from "../schemas/actors";
import type { AppEnv } from "../types";

const actors = new Hono<AppEnv>();

/** Erasure of one actor's personal data, through the project's ledger (it rewrites chain rows). */
actors.delete(
  "/:id",
  requireCredential({ allowEmbed: false }),
  validate("param", actorParamSchema),
  validate("query", erasureQuerySchema),
  async (c) => {
    const projectId = projectOf(c.get("credential"));
    const { id } = c.req.valid("param");
    const organization = c.req.valid("query").organization ?? null;
    const ledger = ledgerOf(c.env, projectId);
    const anonymized = await ledger.eraseActor(id, organization);
    return c.json({ data: { actor_id: id, organization, anonymized } });
  },
);

export default actors;
