import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { alertMail, sendEmailAlert, setEmailPolicy, type AlertMail } from "../../src/alerts/email";
import type { Firing, StoredChannel } from "../../src/alerts/rules";
import { setStreamPolicy } from "../../src/streams/transport";
import { call, createProject, ingest, until } from "../helpers";

let restore: Array<() => void> = [];
beforeEach(() => {
  // Retries within the test's time, as the other channels' tests have them.
  restore = [setStreamPolicy({ baseBackoffMs: 20, maxBackoffMs: 200 })];
});
afterEach(() => restore.forEach((r) => r()));

/** The runtime's own binding (the tests' env: the evaluator's is metered), with every message it is given kept for the test to read. */
function recordMails(): AlertMail[] {
  const sent: AlertMail[] = [];
  restore.push(
    setEmailPolicy({
      binding: () => ({
        send: (async (m: AlertMail) => {
          sent.push(m);
          return env.ALERT_EMAIL.send(m);
        }) as SendEmail["send"],
      }),
    }),
  );
  return sent;
}

async function createRule(key: string, body: unknown) {
  const res = await call("POST", "/v1/alerts", { key, body });
  expect(res.status, res.text).toBe(201);
  return res.json.data;
}

const firingsOf = async (key: string, id: string) => (await call("GET", `/v1/alerts/${id}/firings`, { key })).json.data;

describe("e-mail alert channels", () => {
  it("are created with their recipients shown back, and a firing is delivered through the send_email binding", async () => {
    const p = await createProject();
    const rule = await createRule(p.key, {
      name: "Roles",
      match: { actions: ["member.role.*"] },
      channels: [{ type: "email", to: ["sec@example.com", "Ops.Team+alerts@mail.example.org", "SEC@example.com"] }],
    });
    const shown = { type: "email", to: ["sec@example.com", "Ops.Team+alerts@mail.example.org"], url: "mailto:sec@example.com,Ops.Team%2Balerts@mail.example.org" };
    expect(rule.channels).toEqual([expect.objectContaining({ ...shown, status: "pending", last_error: null })]);
    expect((await call("GET", `/v1/alerts/${rule.id}`, { key: p.key })).json.data.channels[0]).toMatchObject(shown);
    await ingest(p.key, { action: "member.role.changed" });
    const [fired] = await until(async () => {
      const list = await firingsOf(p.key, rule.id);
      return list[0]?.deliveries[0]?.status === "delivered" && list;
    });
    expect(fired.deliveries).toEqual([expect.objectContaining({ channel: 0, status: "delivered", attempts: 1, last_error: null })]);
    expect((await call("GET", `/v1/alerts/${rule.id}`, { key: p.key })).json.data.channels[0].status).toBe("ok");
  });

  it("refuse what is not an address, naming its path, and are refused where the deployment has no binding", async () => {
    const p = await createProject();
    const refused = async (channel: unknown, path: string, message?: RegExp) => {
      const res = await call("POST", "/v1/alerts", { key: p.key, body: { name: "x", channels: [{ type: "webhook", url: "https://hooks.example.com/a" }, channel] } });
      expect(res.status, res.text).toBe(400);
      expect(res.json.error.code).toBe("VALIDATION_ERROR");
      const issue = res.json.error.details.issues.find((i: any) => i.path === path);
      expect(issue, JSON.stringify(res.json.error.details.issues)).toBeTruthy();
      if (message) expect(issue.message).toMatch(message);
    };
    await refused({ type: "email", to: ["ok@example.com", "not an address"] }, "channels.1.to.1", /e-mail address/);
    await refused({ type: "email", to: ["a@example.com\r\nBcc: spy@attacker.test"] }, "channels.1.to.0");
    await refused({ type: "email", to: ["Someone <a@example.com>"] }, "channels.1.to.0");
    await refused({ type: "email", to: ["a@example.com, spy@attacker.test"] }, "channels.1.to.0");
    await refused({ type: "email", to: ["nobody@localhost"] }, "channels.1.to.0");
    await refused({ type: "email", to: [] }, "channels.1.to");
    await refused({ type: "email", to: Array.from({ length: 11 }, (_, i) => `u${i}@example.com`) }, "channels.1.to");
    await refused({ type: "email" }, "channels.1.to");
    await refused({ type: "email", to: ["a@example.com"], url: "https://hooks.example.com/x" }, "channels.1.url");
    await refused({ type: "webhook", url: "https://hooks.example.com/x", to: ["a@example.com"] }, "channels.1.to");
    restore.push(setEmailPolicy({ binding: () => undefined }));
    const res = await call("POST", "/v1/alerts", { key: p.key, body: { name: "x", channels: [{ type: "email", to: ["a@example.com"] }] } });
    expect(res.status, res.text).toBe(400);
    expect(res.json.error.details.issues).toEqual([{ path: "channels.0", message: expect.stringMatching(/^type: this deployment has no e-mail binding/) }]);
  });

  it("say which rule fired, why and on which events, with links; hostile names stay on their line; a test is marked TEST", async () => {
    const p = await createProject();
    expect((await call("PUT", "/v1/schemas/member.role.changed", { key: p.key, body: { display: "{actor.name} changed a role" } })).status).toBe(201);
    const sent = recordMails();
    const rule = await createRule(p.key, {
      name: "Roles\r\nBcc: spy@attacker.test",
      match: { actions: ["member.role.*"] },
      channels: [{ type: "email", to: ["sec@example.com", "ops@example.com"] }],
    });
    const res = await ingest(p.key, { action: "member.role.changed", actor: { id: "u_1", name: "Mallory\r\nSubject: fake\r\n\r\n2. forged line" } });
    expect(res.status, res.text).toBe(201);
    const event = res.json.data;
    const [mail] = await until(async () => sent.length > 0 && sent);
    expect(mail.from).toBe(env.ALERT_EMAIL_FROM);
    expect(mail.to).toEqual(["sec@example.com", "ops@example.com"]);
    expect(mail.subject).toBe(`[Witness] Roles Bcc: spy@attacker.test: 1 event in project ${p.id}`);
    expect(mail.subject).not.toMatch(/[\r\n]/);
    expect(Object.keys(mail.headers)).toEqual(["X-Witness-Firing"]);
    expect(mail.headers["X-Witness-Firing"]).toMatch(new RegExp(`^${p.id}/${rule.id}/\\d+$`));
    const lines = mail.text.split("\r\n");
    expect(mail.text.replaceAll("\r\n", "")).not.toMatch(/[\r\n]/);
    expect(lines).toContain("Why: 1 matching event: member.role.changed");
    expect(lines).toContain("1. Mallory Subject: fake 2. forged line changed a role");
    expect(lines.filter((l) => /^\d+\. /.test(l))).toHaveLength(1);
    expect(lines).toContain(`   action member.role.changed, seq ${event.seq}, id ${event.id}, occurred ${event.occurred_at}`);
    expect(lines).toContain(`   https://witness.test/console/events/${encodeURIComponent(event.id)}`);
    expect(lines).toContain(`The rule and its firings: https://witness.test/console/alerts/${rule.id}`);
    expect(mail.text).not.toMatch(/TEST/);

    const test = await call("POST", `/v1/alerts/${rule.id}/test`, { key: p.key });
    expect(test.json.data.deliveries.map((d: any) => d.status)).toEqual(["delivered"]);
    const marked = sent[sent.length - 1];
    expect(marked.subject).toBe(`[Witness] [TEST] Roles Bcc: spy@attacker.test: test notification for project ${p.id}`);
    expect(marked.text).toMatch(/^TEST NOTIFICATION: /);
    expect(marked.headers["X-Witness-Firing"]).toMatch(/\/test$/);
  });

  it("a send the binding refuses is retried with backoff and shown as failing until it goes through", async () => {
    const p = await createProject();
    let refusing = true;
    restore.push(
      setEmailPolicy({
        binding: () => ({
          send: (async (m: AlertMail) => {
            if (refusing) throw Object.assign(new Error("sender domain not verified"), { code: "E_SENDER_DOMAIN_NOT_AVAILABLE" });
            return env.ALERT_EMAIL.send(m);
          }) as SendEmail["send"],
        }),
      }),
    );
    const rule = await createRule(p.key, { name: "mail", match: {}, channels: [{ type: "email", to: ["sec@example.com"] }] });
    const test = await call("POST", `/v1/alerts/${rule.id}/test`, { key: p.key });
    expect(test.json.data.deliveries).toEqual([
      expect.objectContaining({ status: "retrying", attempts: 1, last_error: "send failed: E_SENDER_DOMAIN_NOT_AVAILABLE: sender domain not verified" }),
    ]);
    const view = (await call("GET", `/v1/alerts/${rule.id}`, { key: p.key })).json.data;
    expect(view.channels[0]).toMatchObject({ status: "failing", last_error: expect.stringContaining("E_SENDER_DOMAIN_NOT_AVAILABLE") });
    await until(async () => (await firingsOf(p.key, rule.id))[0].deliveries[0].attempts >= 2);
    refusing = false;
    // The delivery's record and the channel's state are two writes: wait for both, under load one lands a beat after the other.
    const settled = async () =>
      (await call("GET", `/v1/alerts/${rule.id}`, { key: p.key })).json.data.channels[0].status === "ok" &&
      (await firingsOf(p.key, rule.id))[0].deliveries[0].status === "delivered";
    await until(settled);
    expect((await firingsOf(p.key, rule.id))[0].deliveries[0]).toMatchObject({ status: "delivered", last_error: null });
  });
});

describe("the alert e-mail", () => {
  const firing = (over: Partial<Firing> = {}): Firing => ({
    id: 7,
    rule_id: "al_00000000000000000000",
    rule_name: "Integrity of the trail",
    project_id: "p_1",
    fired_at: "2026-11-01T10:00:00.000Z",
    reason: "Verify job j_1 found hash_mismatch at event ev_2: the chain no longer proves what was recorded. Next: Run GET /v1/events/verify to see the first bad event.",
    group: "verify_failed:j_1",
    count: 0,
    events: [],
    test: false,
    ...over,
  });
  const channel: StoredChannel = { type: "email", url: "mailto:sec@example.com", sealed: "", to: ["sec@example.com"] };

  it("for an integrity firing, names the danger and says what to do next", () => {
    const mail = alertMail(firing(), { kind: "integrity", console_origin: "" }, "alerts@example.com", ["sec@example.com"]);
    expect(mail.subject).toBe("[Witness] Integrity of the trail: integrity alert (verify failed) in project p_1");
    const lines = mail.text.split("\r\n");
    expect(lines).toContain("Why: Verify job j_1 found hash_mismatch at event ev_2: the chain no longer proves what was recorded.");
    const next = lines.indexOf("What to do next:");
    expect(next).toBeGreaterThan(0);
    expect(lines[next + 1]).toBe("Run GET /v1/events/verify to see the first bad event.");
    // The integrity rule is made without a console origin: the API path stands in for the link.
    expect(lines).toContain("The rule and its firings: GET /v1/alerts/al_00000000000000000000/firings");
  });

  it("lists the first events of a large firing and says how many more", () => {
    const events = Array.from({ length: 20 }, (_, i) => ({
      id: `ev_${i}`, seq: i + 1, action: "auth.login.failed", display: null, occurred_at: "2026-11-01T09:59:00Z", organization: "org_1", url: `https://c.example/console/events/ev_${i}`,
    }));
    const mail = alertMail(firing({ rule_name: "Storm", reason: "35 matching events within 60 s", group: "", count: 35, events }), { kind: "events", console_origin: "https://c.example" }, "a@example.com", ["b@example.com"]);
    expect(mail.subject).toBe("[Witness] Storm: 35 events in project p_1");
    expect(mail.text).toContain("Events (the first 20 of 35):\r\n1. auth.login.failed\r\n   action auth.login.failed, seq 1, id ev_0, occurred 2026-11-01T09:59:00Z, organization org_1\r\n");
    expect(mail.text).toContain("…and 15 more: see the rule's firings.");
    expect(mail.text).not.toContain("What to do next");
  });

  it("sending: a binding that throws or never answers is a failed attempt; a bad sender address is named", async () => {
    const failing = { send: async () => Promise.reject(new Error("boom")) } as unknown as SendEmail;
    restore.push(setEmailPolicy({ binding: () => failing }));
    expect(await sendEmailAlert(env, { kind: "events", console_origin: "" }, channel, firing())).toEqual({ ok: false, error: "send failed: boom" });
    restore.push(setEmailPolicy({ binding: () => ({ send: () => new Promise(() => {}) }) as unknown as SendEmail, timeoutMs: 50 }));
    expect(await sendEmailAlert(env, { kind: "events", console_origin: "" }, channel, firing())).toEqual({ ok: false, error: "send failed: no answer within 50 ms" });
    restore.push(setEmailPolicy({ binding: () => undefined }));
    expect(await sendEmailAlert(env, { kind: "events", console_origin: "" }, channel, firing())).toMatchObject({ ok: false, error: expect.stringContaining("no e-mail binding") });
    restore.push(setEmailPolicy({ binding: () => env.ALERT_EMAIL }));
    const misconfigured = { ...env, ALERT_EMAIL_FROM: "Witness <alerts@example.com>" } as Env;
    expect(await sendEmailAlert(misconfigured, { kind: "events", console_origin: "" }, channel, firing())).toMatchObject({ ok: false, error: expect.stringMatching(/^ALERT_EMAIL_FROM .* is not an e-mail address/) });
    expect(await sendEmailAlert(env, { kind: "events", console_origin: "" }, channel, firing())).toEqual({ ok: true });
  });
});
