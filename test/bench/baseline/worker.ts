import { Hono } from "hono";

const encoder = new TextEncoder();
const app = new Hono();

/** The no-op POST that ingest is compared with: parse the JSON body, answer 201. */
app.post("/noop", async (c) => {
  const body = await c.req.json();
  return c.json({ data: { ok: true, action: body.action } }, 201);
});

/**
 * Only the cryptography verify needs per event: SHA-256 of prev_hash + payload
 * and an HMAC-SHA256 of the payload. The client times the request.
 */
app.get("/crypto-loop", async (c) => {
  const n = Number(c.req.query("n") ?? "1000");
  const key = await crypto.subtle.importKey("raw", encoder.encode("baseline-signing-key-0123456789"), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  let prev = "0".repeat(64);
  for (let i = 0; i < n; i++) {
    const payload = `{"action":"user.login.succeeded","actor_type":"user","id":"${i}","metadata":{"plan":"pro","seq":${i}},"occurred_at":"2026-05-05T05:05:05.000Z","organization":"org_1","pii":"${prev}","project_id":"bench","seq":${i},"targets":[{"id":"doc_1","name":"Q3","type":"document"}],"v":1}`;
    const digest = await crypto.subtle.digest("SHA-256", encoder.encode(prev + payload));
    await crypto.subtle.sign("HMAC", key, encoder.encode(payload));
    prev = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  }
  return c.json({ n, last: prev });
});

export default app;
