import { createRoute } from "@hono/zod-openapi";
import { logKeyInfo } from "../log/log-identity";
import { loadReceiptKeys } from "../sealing/receipt-signing";
import { documented, errors, json, router } from "../middleware/openapi";
import { witnessKeysSchema } from "../schemas/responses";

/**
 * Public keys of receipt signatures (a JWK set), so anyone can check a receipt
 * offline; `log` says which of them signs transparency log checkpoints and
 * how a project's vkey is formed from it.
 */
const wellKnown = router();

documented(wellKnown, createRoute({
  method: "get", path: "/witness-keys.json", tags: ["Public"], operationId: "getWitnessKeys", summary: "Public keys of receipt signatures (JWK set)", security: [],
  responses: { 200: json(witnessKeysSchema, "The published keys"), ...errors() },
}));

wellKnown.get("/witness-keys.json", async (c) => {
  const keys = await loadReceiptKeys(c.env.RECEIPT_SIGNING_KEYS);
  c.header("Cache-Control", "public, max-age=300");
  c.header("Access-Control-Allow-Origin", "*");
  const signer = keys.published.find((k) => k.kid === keys.signer?.kid) ?? null;
  return c.json({ keys: keys.published, signing_kid: keys.signer?.kid ?? null, log: logKeyInfo(c.env, signer) });
});

export default wellKnown;
