import { createRoute } from "@hono/zod-openapi";
import { createPortalLink, LINK_TTL } from "../auth/portal";
import { recordAdminAction } from "../chain/self-audit";
import { readJsonObject } from "../lib/request-body";
import { toIssues, validationError } from "../lib/validate";
import { access, auditActor, projectOf } from "../middleware/credential";
import { requestContext } from "../middleware/ingest";
import { AUTH_ERRORS, documented, errors, json, router } from "../middleware/openapi";
import { createPortalLinkSchema, portalLinkResponse } from "../schemas/portal";

/**
 * The customers' admin portal (issue 37): an admin key mints a one-time link
 * for one organization; the pages it opens are src/routes/portal-pages.ts.
 */
const portal = router();
const ADMIN = access("admin");

documented(portal, createRoute({
  method: "post", path: "/links", tags: ["Portal"], operationId: "createPortalLink", summary: "A one-time link to a customer's admin portal", security: ADMIN.security,
  description:
    "Hand the url to the customer's IT admin. Opened once (a second opening, or one after expires_at, is refused), it starts an hour's session scoped to " +
    "the organization: its events (the API's event shape, its organization only), an export, and streams it creates itself (always filtered to the " +
    "organization), as the abilities allow. The session never reaches another organization or any other endpoint. Recorded as witness.portal.link_created; " +
    "what the customer's admin does is recorded with actor type portal and the link's id.",
  request: { body: { required: true, content: { "application/json": { schema: createPortalLinkSchema } } } },
  responses: { 201: json(portalLinkResponse, "The link (its url in this answer only)"), ...errors(...AUTH_ERRORS, "VALIDATION_ERROR", "UNSUPPORTED_MEDIA_TYPE", "EVENT_TOO_LARGE") },
}));
portal.post("/links", ADMIN.guard, async (c) => {
  const credential = c.get("credential");
  const projectId = projectOf(credential);
  const parsed = createPortalLinkSchema.safeParse(await readJsonObject(c));
  if (!parsed.success) throw validationError(toIssues(parsed.error));
  const actor = auditActor(credential);
  const { link, token } = await createPortalLink(c.env, projectId, {
    organization: parsed.data.organization,
    abilities: parsed.data.abilities,
    ttlSeconds: parsed.data.ttl_seconds ?? LINK_TTL.default,
    createdBy: actor.id,
  });
  await recordAdminAction(
    c.env,
    projectId,
    {
      action: "witness.portal.link_created",
      actor,
      organization: link.organization,
      targets: [{ type: "portal_link", id: link.id }],
      metadata: { abilities: link.abilities, expires_at: link.expires_at },
    },
    requestContext(c.req.raw),
  );
  // The token rides in the fragment: never sent to a server, so never in a log or a link unfurler's request.
  const url = `${new URL(c.req.url).origin}/portal/start#${token}`;
  return c.json({ data: { ...link, url } }, 201);
});

export default portal;
