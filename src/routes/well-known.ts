import { Hono } from "hono";
import { loadReceiptKeys } from "../receipts/receipt-signing";
import type { AppEnv } from "../types";

/** Public keys of receipt signatures (a JWK set), so anyone can check a receipt offline. */
const wellKnown = new Hono<AppEnv>();

wellKnown.get("/witness-keys.json", async (c) => {
  const keys = await loadReceiptKeys(c.env.RECEIPT_SIGNING_KEYS);
  c.header("Cache-Control", "public, max-age=300");
  c.header("Access-Control-Allow-Origin", "*");
  return c.json({ keys: keys.published, signing_kid: keys.signer?.kid ?? null });
});

export default wellKnown;
