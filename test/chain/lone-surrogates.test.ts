import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ledgerOf, packEvents } from "../../src/chain/ledger";
import type { NewEvent } from "../../src/model/new-event";
import { call, createProject } from "../helpers";

const CUT = "Ada \ud83d";

function event(fields: Partial<NewEvent>): NewEvent {
  return {
    action: "doc.shared", organization: null, actor_id: "u_1", actor_type: "user", actor_name: "Ada", actor_email: null,
    targets: "[]", metadata: "{}", occurred_at: null, ip_address: "203.0.113.9", user_agent: "t/1", ...fields,
  };
}

/**
 * Appends straight through the ledger, past ingest's validation: what builds
 * before unpaired surrogates were refused did with such an event (hashed as
 * sent, stored by D1 with U+FFFD in its place).
 */
async function appendAsEarlierBuilds(p: { id: string; prefix: string }, events: NewEvent[]) {
  const res = await ledgerOf(env, p.id).append({ events: packEvents(events), idempotencyKey: null, requestHash: null, keyPrefix: p.prefix, rateLimit: 1200, catalogRevision: 0 });
  if (res.status !== "appended") throw new Error(res.status);
  return res.events.map((e) => JSON.parse(e));
}

const verify = async (key: string) => (await call("GET", "/v1/events/verify", { key })).json.data;

describe("rows stored with U+FFFD by earlier builds", () => {
  it("verify checks them as they were hashed, counts them, and goes on past them", async () => {
    const p = await createProject();
    const rows = await appendAsEarlierBuilds(p, [
      event({ action: "before" }),
      event({ actor_name: CUT }),
      event({ action: `doc.${CUT}`, organization: "org_1" }),
      event({ organization: "\udc00 org", actor_email: "ada\ud83d@example.com" }),
      event({ action: "after" }),
    ]);
    const stored = await p.db.prepare("SELECT actor_name FROM events WHERE id = ?").bind(rows[1].id).first<{ actor_name: string }>();
    // What the bug did: the text D1 gives back is not what was hashed.
    expect(stored!.actor_name).toMatch(/^Ada \ufffd+$/);
    expect(await verify(p.key)).toMatchObject({ ok: true, verified: 5, restored_surrogates: 3, failure: null });
    // The public receipt of such an event is valid too.
    const receipt = await call("GET", `/v1/events/${rows[1].id}/receipt`, { key: p.key });
    expect(receipt.json.data.valid).toBe(true);
  });

  it("any other edit of such a row is still caught, including one that writes U+FFFD itself", async () => {
    const p = await createProject();
    const rows = await appendAsEarlierBuilds(p, [event({ actor_name: CUT }), event({ action: "doc.viewed" })]);
    await p.db.prepare("UPDATE events SET organization = 'org_2' WHERE id = ?").bind(rows[0].id).run();
    expect((await verify(p.key)).failure).toMatchObject({ event_id: rows[0].id, reason: "hash_mismatch" });

    const q = await createProject();
    const honest = await appendAsEarlierBuilds(q, [event({ action: "doc.viewed" }), event({ actor_name: "Ada Lovelace" })]);
    await q.db.prepare("UPDATE events SET action = 'doc.\ufffd' WHERE id = ?").bind(honest[0].id).run();
    await q.db.prepare("UPDATE events SET actor_name = 'Ada \ufffdovelace' WHERE id = ?").bind(honest[1].id).run();
    expect((await verify(q.key)).failure).toMatchObject({ event_id: honest[0].id, reason: "hash_mismatch" });
  });

  it("a digest with two such characters is left failing (documented: millions of tries)", async () => {
    const p = await createProject();
    const rows = await appendAsEarlierBuilds(p, [event({ actor_name: CUT, actor_id: "\udc00" })]);
    expect((await verify(p.key)).failure).toMatchObject({ event_id: rows[0].id, reason: "hash_mismatch" });
  });
});
