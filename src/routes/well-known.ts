import { Hono } from "hono";
import { logKeyInfo } from "../log/log-identity";
import { loadReceiptKeys } from "../receipts/receipt-signing";
import type { AppEnv } from "../types";

/**
 * Public keys of receipt signatures (a JWK set), so anyone can check a receipt
 * offline; `log` says which of them signs transparency log checkpoints and
 * how a project's vkey is formed from it.
 */
const wellKnown = new Hono<AppEnv>();

wellKnown.get("/witness-keys.json", async (c) => {
  const keys = await loadReceiptKeys(c.env.RECEIPT_SIGNING_KEYS);
  c.header("Cache-Control", "public, max-age=300");
  c.header("Access-Control-Allow-Origin", "*");
  const signer = keys.published.find((k) => k.kid === keys.signer?.kid) ?? null;
  return c.json({ keys: keys.published, signing_kid: keys.signer?.kid ?? null, log: logKeyInfo(c.env, signer) });
});

export default wellKnown;
