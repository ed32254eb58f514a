import { describe, expect, it } from "vitest";
import { parsePublicKeys, verifyReceipt } from "../../src/scripts/receipt-check.mjs";
import { BASE, call, createProject, ingest, onEveryShard } from "../helpers";

const SECRETS = ["Ada Lovelace", "ada@example.com", "203.0.113.77", "SecretAgent/7.1", "meta-secret-value", "Q3 plan"];

async function seeded() {
  const p = await createProject();
  const first = (await ingest(p.key, { action: "user.login.succeeded" })).json.data;
  const event = (
    await ingest(
      p.key,
      {
        action: "document.shared",
        actor: { id: "u_1", type: "user", name: "Ada Lovelace", email: "ada@example.com" },
        targets: [
          { type: "document", id: "doc_9", name: "Q3 plan" },
          { type: "folder", id: "f_1" },
        ],
        metadata: { note: "meta-secret-value" },
      },
      { ip: "203.0.113.77", headers: { "User-Agent": "SecretAgent/7.1" } },
    )
  ).json.data;
  const last = (await ingest(p.key, { action: "user.logout" })).json.data;
  return { ...p, first, event, last };
}

function expectNoPersonalData(text: string) {
  for (const secret of SECRETS) expect(text).not.toContain(secret);
}

const tamper = onEveryShard;

describe("GET /v1/events/:id/receipt", () => {
  it("returns the receipt fields with an Ed25519 proof that checks against the published keys", async () => {
    const p = await seeded();
    const res = await call("GET", `/v1/events/${p.event.id}/receipt`, { key: p.key });
    expect(res.status).toBe(200);
    const receipt = res.json.data;
    expect(receipt).toEqual({
      type: "witness.receipt.v1",
      event_id: p.event.id,
      action: "document.shared",
      actor: { type: "user", id: "u_1" },
      target: { type: "document", id: "doc_9" },
      occurred_at: p.event.occurred_at,
      hash: p.event.hash,
      prev_hash: p.first.hash,
      signature: p.event.signature,
      seq: 2,
      valid: true,
      issued_at: expect.any(String),
      verification_url: `${BASE}/v1/receipts/${p.event.id}`,
      view_url: `${BASE}/receipts/${p.event.id}`,
      tlog_proof: expect.stringMatching(/^c2sp\.org\/tlog-proof@v1\nindex 1\n/),
      proof: { alg: "Ed25519", kid: "test-2", value: expect.stringMatching(/^[A-Za-z0-9_-]{86}$/) },
    });
    expectNoPersonalData(res.text);

    const keys = await call("GET", "/.well-known/witness-keys.json");
    expect(keys.status).toBe(200);
    expect(keys.json.keys.map((k: { kid: string }) => k.kid)).toEqual(["test-1", "test-2"]);
    expect(keys.json.signing_kid).toBe("test-2");
    expect(await verifyReceipt(receipt, parsePublicKeys(keys.text))).toMatchObject({ ok: true, kid: "test-2", tlog: { index: 1, tree_size: 3 } });
  });

  it("gives null actor and target for a system event without them", async () => {
    const p = await seeded();
    const receipt = (await call("GET", `/v1/events/${p.first.id}/receipt`, { key: p.key })).json.data;
    expect(receipt).toMatchObject({ actor: null, target: null, prev_hash: null, seq: 1, valid: true });
  });

  it("needs an API key of the event's project; unknown ids are 404", async () => {
    const p = await seeded();
    const other = await createProject();
    expect((await call("GET", `/v1/events/${p.event.id}/receipt`)).status).toBe(401);
    const embed = (await call("POST", "/v1/embed/token", { key: p.key, body: {} })).json.data.token;
    expect((await call("GET", `/v1/events/${p.event.id}/receipt`, { key: embed })).status).toBe(403);
    expect((await call("GET", `/v1/events/${p.event.id}/receipt`, { key: other.key })).status).toBe(404);
    const unknown = await call("GET", `/v1/events/${crypto.randomUUID()}/receipt`, { key: p.key });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.code).toBe("NOT_FOUND");
  });

  it("says valid: false when issued for a tampered event", async () => {
    const p = await seeded();
    await tamper("UPDATE events SET action = 'document.deleted' WHERE id = ?", p.event.id);
    expect((await call("GET", `/v1/events/${p.event.id}/receipt`, { key: p.key })).json.data).toMatchObject({
      action: "document.deleted",
      valid: false,
    });
  });
});

describe("GET /v1/receipts/:id (public JSON)", () => {
  it("confirms an intact event to anyone, without a key and without personal data", async () => {
    const p = await seeded();
    const res = await call("GET", `/v1/receipts/${p.event.id}`);
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual({
      event_id: p.event.id,
      action: "document.shared",
      actor: { type: "user", id: "u_1" },
      target: { type: "document", id: "doc_9" },
      occurred_at: p.event.occurred_at,
      seq: 2,
      hash: p.event.hash,
      prev_hash: p.first.hash,
      exists: true,
      valid: true,
      checks: { hash: true, signature: true, predecessor_link: true, successor_link: true },
      checked_at: expect.any(String),
      view_url: `${BASE}/receipts/${p.event.id}`,
    });
    expectNoPersonalData(res.text);
    // The newest event's successor is the chain head the ledger recorded.
    expect((await call("GET", `/v1/receipts/${p.last.id}`)).json.data.checks.successor_link).toBe(true);
  });

  it("turns invalid when the row is tampered with", async () => {
    const p = await seeded();
    await tamper("UPDATE events SET occurred_at = '2020-01-01T00:00:00.000Z' WHERE id = ?", p.event.id);
    expect((await call("GET", `/v1/receipts/${p.event.id}`)).json.data).toMatchObject({ valid: false, checks: { hash: false } });
    await tamper("UPDATE events SET signature = ? WHERE id = ?", p.first.signature, p.last.id);
    expect((await call("GET", `/v1/receipts/${p.last.id}`)).json.data).toMatchObject({
      valid: false,
      checks: { hash: true, signature: false },
    });
  });

  it("notices a deleted neighbour on either side", async () => {
    const p = await seeded();
    await tamper("DELETE FROM events WHERE id = ?", p.last.id);
    expect((await call("GET", `/v1/receipts/${p.event.id}`)).json.data.checks).toEqual({
      hash: true,
      signature: true,
      predecessor_link: true,
      successor_link: false,
    });
    await tamper("DELETE FROM events WHERE id = ?", p.first.id);
    expect((await call("GET", `/v1/receipts/${p.event.id}`)).json.data.checks.predecessor_link).toBe(false);
  });

  it("is 404 for an unknown id", async () => {
    const res = await call("GET", `/v1/receipts/${crypto.randomUUID()}`);
    expect(res.status).toBe(404);
    expect(res.json.error.code).toBe("NOT_FOUND");
  });
});

describe("GET /receipts/:id (public page)", () => {
  it("shows the verdict and the public fields under a strict CSP, with only the Worker's check script and no personal data", async () => {
    const p = await seeded();
    const res = await call("GET", `/receipts/${p.event.id}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toMatch(/^text\/html/);
    const csp = res.headers.get("Content-Security-Policy")!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain("unsafe-inline");
    // The page's script checks its signed receipt in the reader's browser, with the keys this origin publishes.
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(res.text).toContain('<link rel="stylesheet" href="/assets/public/site.css"/>');
    expect(res.text.match(/<script[^>]*>/gi)).toEqual(['<script src="/assets/public/check.js" defer="">']);
    for (const shown of ["Verified by the server:", "document.shared", "user", "u_1", "document", "doc_9", p.event.occurred_at, p.event.hash, "#2"]) {
      expect(res.text).toContain(shown);
    }
    expectNoPersonalData(res.text);
  });

  it("escapes every piece of event text", async () => {
    const p = await createProject();
    const evil = (
      await ingest(p.key, {
        action: "<script>alert(1)</script>",
        actor: { id: '"><script>alert(2)</script>', type: "user<b>" },
        targets: [{ type: "doc", id: "<img src=x onerror=alert(3)>" }],
      })
    ).json.data;
    const res = await call("GET", `/receipts/${evil.id}`);
    expect(res.status).toBe(200);
    expect(res.text.match(/<script[^>]*>/gi)).toEqual(['<script src="/assets/public/check.js" defer="">']);
    expect(res.text).not.toMatch(/<script>|<img|<b>/i);
    expect(res.text).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(res.text).toContain("&quot;&gt;&lt;script&gt;alert(2)&lt;/script&gt;");
    expect(res.text).toContain("&lt;img src=x onerror=alert(3)&gt;");
  });

  it("says Not verified once the event is tampered with", async () => {
    const p = await seeded();
    await tamper("UPDATE events SET action = 'document.unshared' WHERE id = ?", p.event.id);
    const res = await call("GET", `/receipts/${p.event.id}`);
    expect(res.status).toBe(200);
    expect(res.text).toContain("Not verified:");
    expect(res.text).toContain("Content does not match its hash");
  });

  it("is a 404 page for an unknown id, under the same CSP", async () => {
    const res = await call("GET", `/receipts/${crypto.randomUUID()}`);
    expect(res.status).toBe(404);
    expect(res.headers.get("Content-Type")).toMatch(/^text\/html/);
    expect(res.headers.get("Content-Security-Policy")).toContain("default-src 'none'");
    expect(res.text).toContain("Receipt not found");
  });
});
