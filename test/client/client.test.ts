import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { backoffMs, createClient, retryAfterMs, WitnessError } from "../../src/client/index.js";
import { checkResponse } from "../openapi/contract";
import { BASE, call, createProject, createScopedKey, onEveryShard, openApiDocument, until } from "../helpers";
import { Network } from "../streams/receiver";

/** The worker's own fetch handler as the client's fetch, with a log of what was sent. */
function workerFetch(log: Request[] = []) {
  return async (url: string, init?: RequestInit) => {
    const req = new Request(url, init);
    log.push(req.clone());
    const res = await exports.default.fetch(req);
    // What the client was given must be what the document (and so its types) says.
    const body = await res.clone().text();
    const { pathname } = new URL(req.url);
    checkResponse(await openApiDocument(), { method: req.method, path: pathname, status: res.status, contentType: res.headers.get("Content-Type"), text: body });
    return res;
  };
}

async function clientFor(options: Record<string, unknown> = {}) {
  const project = await createProject();
  const sleeps: number[] = [];
  const client = createClient({
    baseUrl: BASE,
    apiKey: project.key,
    fetch: workerFetch(),
    sleep: async (ms) => void sleeps.push(ms),
    ...options,
  });
  return { project, client, sleeps };
}

async function all<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

describe("@witness/client", () => {
  it("creates, gets, lists and searches events across every page", async () => {
    const { client } = await clientFor();
    const first = await client.events.create({ action: "user.login", actor: { id: "u1" }, metadata: { city: "Lisbon" } });
    expect(first.seq).toBe(1);
    const batch = await client.events.createBatch([1, 2, 3, 4].map((n) => ({ action: `doc.edit`, actor: { name: "Quartz Team" }, metadata: { n } })));
    expect(batch.map((e) => e.seq)).toEqual([2, 3, 4, 5]);
    expect((await client.events.get(first.id)).action).toBe("user.login");
    const listed = await all(client.events.list({ limit: 2 }));
    expect(listed.map((e) => e.seq)).toEqual([5, 4, 3, 2, 1]);
    const found = await all(client.events.search("quartz", { limit: 3 }));
    expect(found).toHaveLength(4);
    const report = await client.events.verify();
    expect(report.ok).toBe(true);
    expect(report.verified).toBe(5);
  });

  it("keeps one Idempotency-Key across retries, so a lost answer stores the event once", async () => {
    const project = await createProject();
    const sent: Request[] = [];
    const inner = workerFetch(sent);
    let calls = 0;
    const client = createClient({
      baseUrl: BASE,
      apiKey: project.key,
      sleep: async () => {},
      // The first answer is lost after the worker stored the event.
      fetch: async (url, init) => {
        const res = await inner(url, init);
        return ++calls === 1 ? new Response("upstream reset", { status: 502 }) : res;
      },
    });
    const event = await client.events.create({ action: "invoice.paid" });
    const keys = sent.map((r) => r.headers.get("Idempotency-Key"));
    expect(keys).toHaveLength(2);
    expect(keys[0]).toBeTruthy();
    expect(keys[1]).toBe(keys[0]);
    const reader = createClient({ baseUrl: BASE, apiKey: project.key, fetch: workerFetch() });
    expect((await all(reader.events.list())).map((e) => e.id)).toEqual([event.id]);
    // A new call gets a new key.
    await client.events.create({ action: "invoice.paid" });
    expect(sent[2].headers.get("Idempotency-Key")).not.toBe(keys[0]);
  });

  it("retries network errors, 408, 429 and 5xx with backoff, honouring Retry-After", async () => {
    const project = await createProject();
    const inner = workerFetch();
    const answers: Array<() => Promise<Response>> = [
      () => Promise.reject(new TypeError("connection refused")),
      async () => new Response("", { status: 408 }),
      async () => Response.json({ error: { code: "RATE_LIMITED", message: "slow down", details: {} } }, { status: 429, headers: { "Retry-After": "7" } }),
      async () => new Response("", { status: 503 }),
    ];
    const sleeps: number[] = [];
    const client = createClient({
      baseUrl: BASE,
      apiKey: project.key,
      minDelayMs: 100,
      maxDelayMs: 1000,
      sleep: async (ms) => void sleeps.push(ms),
      fetch: (url, init) => (answers.length > 0 ? answers.shift()!() : inner(url, init)),
    });
    const stored = await client.events.create({ action: "a.b" });
    expect(stored.action).toBe("a.b");
    expect(sleeps).toHaveLength(4);
    expect(sleeps[0]).toBeGreaterThanOrEqual(50);
    expect(sleeps[0]).toBeLessThanOrEqual(100);
    expect(sleeps[2]).toBe(7000);
    expect(sleeps[3]).toBeLessThanOrEqual(800);
  });

  it("gives up after its retries with the last answer's WitnessError, and never retries a 4xx", async () => {
    let calls = 0;
    const failing = createClient({
      baseUrl: BASE,
      apiKey: "k",
      retries: 2,
      sleep: async () => {},
      fetch: async () => (calls++, Response.json({ error: { code: "INTERNAL_ERROR", message: "boom", details: { request_id: "r1" } } }, { status: 500 })),
    });
    const error = await failing.events.get("x").catch((e) => e);
    expect(calls).toBe(3);
    expect(error).toBeInstanceOf(WitnessError);
    expect(error).toMatchObject({ status: 500, code: "INTERNAL_ERROR", details: { request_id: "r1" } });

    const { client } = await clientFor();
    const invalid = await client.events.create({ action: "" } as never).catch((e) => e);
    expect(invalid).toBeInstanceOf(WitnessError);
    expect(invalid.status).toBe(400);
    expect(invalid.code).toBe("VALIDATION_ERROR");
    expect(invalid.details.issues[0].path).toBe("action");
    const missing = await client.events.get("0190b2a0-0000-7000-8000-000000000000").catch((e) => e);
    expect(missing).toMatchObject({ status: 404, code: "NOT_FOUND" });

    const offline = createClient({ baseUrl: BASE, retries: 1, sleep: async () => {}, fetch: () => Promise.reject(new TypeError("offline")) });
    expect(await offline.events.get("x").catch((e) => e)).toMatchObject({ status: 0, code: "NETWORK_ERROR" });
  });

  it("downloads an export as a stream", async () => {
    const { client } = await clientFor();
    await client.events.createBatch([{ action: "a.one" }, { action: "a.two" }]);
    const stream = await client.exports.download({ format: "json" });
    expect(stream).toBeInstanceOf(ReadableStream);
    const events = JSON.parse(await new Response(stream).text());
    expect(events.map((e: { action: string }) => e.action).sort()).toEqual(["a.one", "a.two"]);
  });

  it("gets a receipt and verifies it offline; an edited one fails", async () => {
    const { client } = await clientFor();
    const event = await client.events.create({ action: "contract.signed", actor: { id: "u9", type: "user" } });
    const receipt = await client.receipts.get(event.id);
    expect(receipt.event_id).toBe(event.id);
    expect(await client.receipts.verifyOffline(receipt)).toMatchObject({ ok: true });
    expect(await client.receipts.verifyOffline({ ...receipt, action: "contract.voided" })).toMatchObject({ ok: false });
    expect((await client.receipts.status(event.id)).valid).toBe(true);
  });

  it("fails a receipt Witness issued saying valid: false, and receipt text with a key given twice", async () => {
    const { client, project } = await clientFor();
    const [event] = await client.events.createBatch([{ action: "contract.signed", actor: { id: "u9" } }, { action: "contract.filed" }]);
    await onEveryShard("UPDATE events SET action = 'contract.voided' WHERE id = ?", event.id);
    const receipt = await client.receipts.get(event.id);
    expect(receipt).toMatchObject({ action: "contract.voided", valid: false });
    const check = await client.receipts.verifyOffline(receipt);
    expect(check).toMatchObject({ ok: false, reason: expect.stringContaining("valid: false") });

    const other = await client.events.create({ action: "contract.signed" });
    const text = (await call("GET", `/v1/events/${other.id}/receipt`, { key: project.key })).text;
    expect(await client.receipts.verifyOffline(text)).toMatchObject({ ok: true });
    // The last "valid" wins in JSON.parse, so the proof holds; a first-wins reader sees false.
    const twice = text.replace('{"data":{', '{"data":{"valid":false,');
    expect(await client.receipts.verifyOffline(JSON.parse(twice))).toMatchObject({ ok: true });
    expect(await client.receipts.verifyOffline(twice)).toEqual({ ok: false, reason: 'the receipt is not strict JSON (duplicate key "valid")' });
  });

  it("erases an actor and mints an embed token", async () => {
    const { client } = await clientFor();
    await client.events.create({ action: "a.b", actor: { id: "gone", email: "gone@example.com" } });
    const erased = await client.actors.erase("gone");
    expect(erased).toMatchObject({ actor_id: "gone", by: "id", status: "applying", erasure_id: 1 });
    expect(erased.job_id).toEqual(expect.any(String));
    const token = await client.embed.createToken({ organization: "org_1" });
    expect(token.organization).toBe("org_1");
    const embed = createClient({ baseUrl: BASE, apiKey: token.token, fetch: workerFetch() });
    expect(await all(embed.events.list())).toEqual([]);
  });
});

describe("@witness/client: scopes and keys", () => {
  it("names the scope a 403 needs on WitnessError.requiredScope, for an ingest-only key", async () => {
    const { client: admin } = await clientFor();
    const made = await admin.keys.create({ scopes: ["ingest"], label: "app servers" });
    expect(made).toMatchObject({ scopes: ["ingest"], label: "app servers", revoked_at: null });
    const app = createClient({ baseUrl: BASE, apiKey: made.key, fetch: workerFetch(), sleep: async () => {} });
    // seq 1 is the key's own creation, recorded in the chain.
    expect((await app.events.create({ action: "invoice.paid" })).seq).toBe(2);

    const reading = await all(app.events.list()).catch((e) => e);
    expect(reading).toBeInstanceOf(WitnessError);
    expect(reading).toMatchObject({ status: 403, code: "FORBIDDEN", requiredScope: "read", details: { required_scope: "read" } });
    const erasing = await app.actors.erase("u_1").catch((e) => e);
    expect(erasing).toMatchObject({ status: 403, requiredScope: "admin" });
    const minting = await app.keys.create({ scopes: ["ingest"] }).catch((e) => e);
    expect(minting).toMatchObject({ status: 403, requiredScope: "admin" });
    // Any other error has none.
    const invalid = await app.events.create({ action: "" } as never).catch((e) => e);
    expect(invalid).toMatchObject({ status: 400, requiredScope: null });
  });

  it("lists and revokes keys, and never retries a key creation whose answer may be lost", async () => {
    const { client: admin, project } = await clientFor();
    const made = await admin.keys.create({ scopes: ["read"], label: "dashboard" });
    const listed = await admin.keys.list();
    expect(listed.map((k) => k.prefix).sort()).toEqual([made.prefix, project.prefix].sort());
    expect(listed.find((k) => k.prefix === made.prefix)).toMatchObject({ scopes: ["read"], label: "dashboard", created_by: project.prefix });
    expect(JSON.stringify(listed)).not.toContain(made.key);
    expect((await admin.keys.revoke(made.prefix)).revoked_at).toEqual(expect.any(String));
    const revoked = createClient({ baseUrl: BASE, apiKey: made.key, fetch: workerFetch(), retries: 0 });
    expect(await revoked.events.verify().catch((e) => e)).toMatchObject({ status: 401, code: "UNAUTHORIZED" });

    let calls = 0;
    const inner = workerFetch();
    const flaky = createClient({
      baseUrl: BASE,
      apiKey: project.key,
      sleep: async () => {},
      // The key is made, then the answer is lost on the way back.
      fetch: async (url, init) => (calls++, await inner(url, init), new Response("", { status: 502 })),
    });
    expect(await flaky.keys.create({ scopes: ["ingest"] }).catch((e) => e)).toMatchObject({ status: 502 });
    expect(calls).toBe(1);
    expect(await admin.keys.list()).toHaveLength(3);
  });
});

/** A realistic schema: what member.role.changed carries, and its sentence. */
const ROLE_CHANGED = {
  description: "A member's role in an organization changed",
  metadata: {
    type: "object",
    properties: { role: { enum: ["viewer", "admin", "owner"] } },
    required: ["role"],
  },
  targets: [{ type: "user", required: true }],
  actor_types: ["user"],
  changes: { fields: ["role"] },
  display: "{actor.name|actor.id} changed {targets.user.name|targets.user.id}'s role from {changes.role.before|\"nothing\"} to {changes.role.after}",
};

const roleChanged = (role: string, extra: Record<string, unknown> = {}) => ({
  action: "member.role.changed",
  actor: { id: "u_1", type: "user", name: "Ada" },
  targets: [{ type: "user", id: "u_81", name: "Bob" }],
  metadata: { role },
  changes: [{ field: "role", before: "viewer", after: role }],
  ...extra,
});

describe("@witness/client: action catalog", () => {
  it("puts schema versions and reads them back: newest with its versions, one version, every schema page after page", async () => {
    const { client, project } = await clientFor();
    const v1 = await client.schemas.put("member.role.changed", ROLE_CHANGED);
    expect(v1).toMatchObject({ action: "member.role.changed", version: 1, created_by: project.prefix, document: ROLE_CHANGED });
    expect(v1.sha256).toMatch(/^[0-9a-f]{64}$/);
    const v2 = await client.schemas.put("member.role.changed", { ...ROLE_CHANGED, description: "Role changed (v2)" });
    expect(v2.version).toBe(2);
    await client.schemas.put("doc.read", { description: "Someone read a document" });

    const newest = await client.schemas.get("member.role.changed");
    expect(newest).toMatchObject({ action: "member.role.changed", version: 2, sha256: v2.sha256, document: { description: "Role changed (v2)" } });
    expect(newest.versions.map((v) => [v.version, v.sha256])).toEqual([[1, v1.sha256], [2, v2.sha256]]);
    const first = await client.schemas.version("member.role.changed", 1);
    expect(first).toEqual(v1);
    const listed = await all(client.schemas.list({ limit: 1 }));
    expect(listed.map((s) => [s.action, s.version])).toEqual([["doc.read", 1], ["member.role.changed", 2]]);

    // The API's errors, as every other call gives them.
    expect(await client.schemas.get("never.seen").catch((e) => e)).toMatchObject({ status: 404, code: "NOT_FOUND" });
    const missing = await client.schemas.version("member.role.changed", 3).catch((e) => e);
    expect(missing).toBeInstanceOf(WitnessError);
    expect(missing).toMatchObject({ status: 404, code: "NOT_FOUND" });
    const refused = await client.schemas.put("a.b", { metadata: { type: "object", properties: { role: { type: "strnig" } } } }).catch((e) => e);
    expect(refused).toBeInstanceOf(WitnessError);
    expect(refused).toMatchObject({ status: 400, code: "VALIDATION_ERROR" });
    expect(refused.details.issues.map((i: { path: string }) => i.path).join(" ")).toMatch(/metadata\.properties\.role\.type/);
    const own = await client.schemas.put("witness.key.created", {}).catch((e) => e);
    expect(own).toMatchObject({ status: 400, code: "VALIDATION_ERROR" });
    const reader = createClient({ baseUrl: BASE, apiKey: (await createScopedKey(project.id, ["read"])).key, fetch: workerFetch() });
    expect(await reader.schemas.put("a.b", {}).catch((e) => e)).toMatchObject({ status: 403, code: "FORBIDDEN", requiredScope: "admin" });
    expect((await reader.schemas.get("doc.read")).version).toBe(1);
  });

  it("changes the catalog settings and reads them back; enforce refuses, warn marks, and events carry changes and their sentence", async () => {
    const { client, project } = await clientFor();
    expect(await client.catalog.settings()).toEqual({ mode: "off", unknown_actions: "allow" });
    await client.schemas.put("member.role.changed", ROLE_CHANGED);
    expect(await client.catalog.setSettings({ mode: "enforce" })).toEqual({ mode: "enforce", unknown_actions: "allow" });
    expect(await client.catalog.settings()).toEqual({ mode: "enforce", unknown_actions: "allow" });

    const stored = await client.events.create(roleChanged("admin"));
    expect(stored).toMatchObject({
      changes: [{ field: "role", before: "viewer", after: "admin" }],
      schema_version: 1,
      schema_valid: true,
      display: "Ada changed Bob's role from viewer to admin",
    });
    expect(await client.events.get(stored.id)).toMatchObject({ changes: stored.changes, schema_version: 1, schema_valid: true, display: stored.display });
    const broken = await client.events.create(roleChanged("emperor")).catch((e) => e);
    expect(broken).toBeInstanceOf(WitnessError);
    expect(broken).toMatchObject({ status: 400, code: "VALIDATION_ERROR", details: { schema_version: 1 } });
    expect(broken.details.issues[0].path).toBe("metadata.role");

    // Version 2 adds "guest"; warn stores an event that breaks the version it names.
    const v2 = { ...ROLE_CHANGED, metadata: { ...ROLE_CHANGED.metadata, properties: { role: { enum: ["viewer", "admin", "owner", "guest"] } } } };
    await client.schemas.put("member.role.changed", v2);
    expect(await client.catalog.setSettings({ mode: "warn", unknown_actions: "allow" })).toEqual({ mode: "warn", unknown_actions: "allow" });
    const [guest, asV1] = await client.events.createBatch([roleChanged("guest"), roleChanged("guest", { version: 1, changes: [{ field: "role", after: "guest" }] })]);
    expect(guest).toMatchObject({ schema_version: 2, schema_valid: true });
    expect(asV1).toMatchObject({ schema_version: 1, schema_valid: false, changes: [{ field: "role", after: "guest" }], display: "Ada changed Bob's role from nothing to guest" });
    const listed = await all(client.events.list({ action: "member.role.changed", limit: 2 }));
    expect(listed.map((e) => [e.schema_version, e.schema_valid, e.display])).toEqual([
      [1, false, "Ada changed Bob's role from nothing to guest"],
      [2, true, "Ada changed Bob's role from viewer to guest"],
      [1, true, "Ada changed Bob's role from viewer to admin"],
    ]);
    expect((await client.events.verify()).ok).toBe(true);

    const bad = await client.catalog.setSettings({ mode: "strict" } as never).catch((e) => e);
    expect(bad).toMatchObject({ status: 400, code: "VALIDATION_ERROR" });
    expect(await client.catalog.settings()).toEqual({ mode: "warn", unknown_actions: "allow" });
    const reader = createClient({ baseUrl: BASE, apiKey: (await createScopedKey(project.id, ["read"])).key, fetch: workerFetch() });
    expect(await reader.catalog.setSettings({ mode: "off" }).catch((e) => e)).toMatchObject({ status: 403, requiredScope: "admin" });
    expect(await reader.catalog.settings()).toEqual({ mode: "warn", unknown_actions: "allow" });
  });

  it("lists the recorded actions with their counts and schema version, by prefix, page after page", async () => {
    const { client } = await clientFor();
    await client.schemas.put("doc.read", { description: "Someone read a document" });
    await client.events.createBatch([
      { action: "doc.read", occurred_at: "2025-03-01T10:15:00Z" },
      { action: "doc.read", occurred_at: "2025-03-02T08:05:00Z" },
      { action: "doc.deleted", occurred_at: "2025-03-01T10:20:00Z" },
      { action: "user.login", occurred_at: "2025-03-01T11:00:00Z" },
    ]);
    const docs = await all(client.actions.list({ prefix: "doc.", limit: 1 }));
    expect(docs).toEqual([
      { action: "doc.deleted", count: 1, first_seen: "2025-03-01T10:00:00.000Z", last_seen: "2025-03-01T10:59:59.999Z", schema_version: null },
      { action: "doc.read", count: 2, first_seen: "2025-03-01T10:00:00.000Z", last_seen: "2025-03-02T08:59:59.999Z", schema_version: 1 },
    ]);
    const every = await all(client.actions.list());
    expect(every.filter((a) => !a.action.startsWith("witness.")).map((a) => [a.action, a.count])).toEqual([["doc.deleted", 1], ["doc.read", 2], ["user.login", 1]]);
    expect(await all(client.actions.list({ prefix: "nothing." }))).toEqual([]);
    const invalid = await all(client.actions.list({ limit: 0 })).catch((e) => e);
    expect(invalid).toBeInstanceOf(WitnessError);
    expect(invalid).toMatchObject({ status: 400, code: "VALIDATION_ERROR" });
  });

  it("names any action in the path, one segment whatever it holds; refuses one no URL can name before sending it", async () => {
    const sent: Request[] = [];
    const project = await createProject();
    const client = createClient({ baseUrl: BASE, apiKey: project.key, fetch: workerFetch(sent) });
    const names = ["billing/invoice.paid", "50%.off", "q?x#y.z", "a b+c", "ünï.cödé", "a%2Fb", "..a", "x/../y"];
    for (const name of names) {
      const put = await client.schemas.put(name, { description: name });
      expect(put).toMatchObject({ action: name, version: 1 });
      expect(await client.schemas.get(name)).toMatchObject({ action: name, document: { description: name } });
      expect(await client.schemas.version(name, 1)).toMatchObject({ action: name, version: 1 });
    }
    expect((await all(client.schemas.list())).map((s) => s.action)).toEqual([...names].sort());
    expect(new URL(sent[0].url).pathname).toBe("/v1/schemas/billing%2Finvoice.paid");

    const before = sent.length;
    for (const name of ["", ".", ".."]) {
      for (const attempt of [client.schemas.get(name), client.schemas.put(name, {}), client.schemas.version(name, 1), client.events.get(name)]) {
        const error = await attempt.catch((e) => e);
        expect(error).toBeInstanceOf(WitnessError);
        expect(error).toMatchObject({ status: 400, code: "VALIDATION_ERROR" });
        expect(error.details.issues).toHaveLength(1);
      }
    }
    expect(await client.schemas.version("doc.read", ".." as never).catch((e) => e)).toMatchObject({ code: "VALIDATION_ERROR", details: { issues: [{ path: "version" }] } });
    expect(sent.length).toBe(before);
  });

  it("never retries a schema put whose answer may be lost (each makes a version); retries reads", async () => {
    const project = await createProject();
    const inner = workerFetch();
    let calls = 0;
    const flaky = createClient({
      baseUrl: BASE,
      apiKey: project.key,
      sleep: async () => {},
      // Each request reaches the worker, then its answer is lost on the way back.
      fetch: async (url, init) => (calls++, await inner(url, init), new Response("", { status: 502 })),
    });
    expect(await flaky.schemas.put("a.b", { description: "once" }).catch((e) => e)).toMatchObject({ status: 502, code: "HTTP_ERROR" });
    expect(calls).toBe(1);
    const client = createClient({ baseUrl: BASE, apiKey: project.key, fetch: workerFetch() });
    expect((await client.schemas.get("a.b")).versions).toHaveLength(1);
    // A settings change is the same whichever attempt lands: it is retried.
    calls = 0;
    expect(await flaky.catalog.setSettings({ mode: "warn" }).catch((e) => e)).toMatchObject({ status: 502 });
    expect(calls).toBe(5);
    expect(await client.catalog.settings()).toEqual({ mode: "warn", unknown_actions: "allow" });
    const changes = await all(client.events.list({ action: "witness.catalog.changed" }));
    expect(changes).toHaveLength(1);
  });
});

/** Backdated out of order: the list would put them anywhere, the feed keeps chain order. */
const backdated = (n: number, action: string) =>
  Array.from({ length: n }, (_, i) => ({ action, occurred_at: new Date(Date.UTC(2024, 0, 1) + ((i * 7919) % 97) * 86_400_000).toISOString() }));


describe("@witness/client: event feed", () => {
  it("yields every event in chain order, then tells onPage where to resume; from the saved cursor only the new ones come", async () => {
    const { client } = await clientFor();
    await client.events.createBatch(backdated(5, "doc.read"));
    const log: string[] = [];
    let saved: string | undefined;
    for await (const event of client.events.feed({ limit: 2, onPage: (page) => void (log.push(`page ${page.at_head}`), (saved = page.nextCursor)) })) {
      log.push(`seq ${event.seq}`);
    }
    // Each page's events before its onPage: a cursor saved there never passes an unhandled event.
    expect(log.filter((l) => l.startsWith("seq"))).toEqual(["seq 1", "seq 2", "seq 3", "seq 4", "seq 5"]);
    expect(log.indexOf("page false")).toBe(2);
    expect(log.at(-1)).toBe("page true");
    expect(saved).toEqual(expect.any(String));

    // The collector restarts later, after more events, some backdated before everything.
    await client.events.createBatch([...backdated(3, "doc.edit"), { action: "late", occurred_at: "2020-01-01T00:00:00Z" }]);
    const pages: Array<{ nextCursor: string; gaps: unknown[]; at_head: boolean }> = [];
    const resumed = await all(client.events.feed({ after: saved, limit: 3, onPage: async (page) => void pages.push(page) }));
    expect(resumed.map((e) => [e.seq, e.action])).toEqual([[6, "doc.edit"], [7, "doc.edit"], [8, "doc.edit"], [9, "late"]]);
    expect(pages.at(-1)).toMatchObject({ at_head: true, gaps: [] });
    expect(await all(client.events.feed({ after: pages.at(-1)!.nextCursor }))).toEqual([]);

    // Filters, and one raw page.
    expect((await all(client.events.feed({ action: "doc.edit", limit: 1 }))).map((e) => e.seq)).toEqual([6, 7, 8]);
    const page = await client.events.feedPage({ after: saved, limit: 2 });
    expect(page.data.map((e) => e.seq)).toEqual([6, 7]);
    expect(page).toMatchObject({ gaps: [], at_head: false, nextCursor: expect.any(String) });

    // A consumer that stops mid-page is not told to save a cursor past what it did not handle.
    let told = 0;
    for await (const event of client.events.feed({ limit: 4, onPage: () => void told++ })) if (event.seq === 2) break;
    expect(told).toBe(0);
  });

  it("with follow, long-polls at the head and yields an event committed while it waits", async () => {
    const sent: Request[] = [];
    const project = await createProject();
    const client = createClient({ baseUrl: BASE, apiKey: project.key, fetch: workerFetch(sent) });
    await client.events.create({ action: "first" });
    const seen: string[] = [];
    const idle: boolean[] = [];
    for await (const event of client.events.feed({
      follow: true,
      wait: 1,
      onPage: (page) => {
        idle.push(page.at_head);
        // The first empty answer is the wait running out: commit while the next one waits.
        if (idle.length === 2) setTimeout(() => void client.events.create({ action: "while.waiting" }), 300);
      },
    })) {
      seen.push(event.action);
      if (event.action === "while.waiting") break;
    }
    expect(seen).toEqual(["first", "while.waiting"]);
    expect(idle.slice(0, 2)).toEqual([true, true]);
    const feedQueries = sent.filter((r) => new URL(r.url).pathname === "/v1/events/feed").map((r) => new URL(r.url).searchParams);
    expect(feedQueries.every((q) => q.get("wait") === "1")).toBe(true);
    expect(feedQueries[0].has("after")).toBe(false);
    expect(feedQueries.slice(1).every((q) => q.has("after"))).toBe(true);

    // Without a wait, follow long-polls for the API's most, 25 seconds.
    const urls: string[] = [];
    const answer = { data: [], gaps: [], nextCursor: "wf1.0.x", at_head: true };
    const stub = createClient({ baseUrl: BASE, apiKey: "k", fetch: async (url) => (urls.push(url), Response.json(answer)) });
    // No event ever comes, so no break: an onPage that throws ends it (as it would end a collector).
    const stop = () => {
      if (urls.length >= 3) throw new Error("enough");
    };
    await expect(all(stub.events.feed({ follow: true, onPage: stop }))).rejects.toThrow("enough");
    expect(urls).toHaveLength(3);
    expect(urls.map((u) => new URL(u).searchParams.get("wait"))).toEqual(["25", "25", "25"]);
    expect(urls.map((u) => new URL(u).searchParams.get("after"))).toEqual([null, "wf1.0.x", "wf1.0.x"]);
    // wait 0: the API answers at once, so the client pauses a second between idle answers.
    const pauses: number[] = [];
    urls.length = 0;
    const polling = createClient({ baseUrl: BASE, apiKey: "k", sleep: async (ms) => void pauses.push(ms), fetch: async (url) => (urls.push(url), Response.json(answer)) });
    await expect(all(polling.events.feed({ follow: true, wait: 0, onPage: stop }))).rejects.toThrow("enough");
    expect(urls.map((u) => new URL(u).searchParams.get("wait"))).toEqual(["0", "0", "0"]);
    expect(pauses).toEqual([1000, 1000]);
  });

  it("surfaces a tampered cursor as WitnessError 400, and a page without its cursor as BAD_RESPONSE", async () => {
    const { client } = await clientFor();
    await client.events.create({ action: "a.b" });
    const { nextCursor } = await client.events.feedPage();
    const tampered = nextCursor.slice(0, -2) + (nextCursor.endsWith("A") ? "BB" : "AA");
    const error = await all(client.events.feed({ after: tampered })).catch((e) => e);
    expect(error).toBeInstanceOf(WitnessError);
    expect(error).toMatchObject({ status: 400, code: "VALIDATION_ERROR" });
    expect(error.details.issues[0].path).toBe("after");
    expect(await client.events.feedPage({ after: nextCursor, since: "2024-01-01T00:00:00Z" }).catch((e) => e)).toMatchObject({ status: 400, code: "VALIDATION_ERROR" });

    const stub = createClient({ baseUrl: BASE, apiKey: "k", fetch: async () => Response.json({ data: [], gaps: [], nextCursor: null, at_head: false }) });
    expect(await all(stub.events.feed()).catch((e) => e)).toMatchObject({ code: "BAD_RESPONSE" });
  });
});

describe("@witness/client: alerts", () => {
  const HOOK = "hooks.acme-client.com";
  async function withNetwork<T>(body: (net: Network) => Promise<T>): Promise<T> {
    const net = new Network();
    net.dns.set(HOOK, ["93.184.216.34"]);
    const restore = net.install();
    try {
      return await body(net);
    } finally {
      restore();
    }
  }

  it("creates a rule (its webhook secret shown once), lists it beside the integrity rule, updates, tests, gets and deletes it", () =>
    withNetwork(async (net) => {
      const { client, project } = await clientFor();
      const rule = await client.alerts.create({ name: "Admin granted", match: { actions: ["member.role.*"] }, channels: [{ type: "webhook", url: `https://${HOOK}/alerts` }] });
      expect(rule).toMatchObject({ name: "Admin granted", kind: "events", enabled: true, cooldown_seconds: 0, threshold: null, match: { actions: ["member.role.*"] } });
      expect(rule.id).toMatch(/^al_[0-9a-f]{20}$/);
      const secret = rule.channels[0].secret!;
      expect(secret).toMatch(/^whsec_/);

      const listed = await client.alerts.list();
      expect(listed.map((r) => r.kind).sort()).toEqual(["events", "integrity"]);
      expect(listed.find((r) => r.id === rule.id)).toMatchObject({ name: "Admin granted", channels: [{ type: "webhook", status: "pending" }] });
      expect(JSON.stringify(listed)).not.toContain(secret);
      expect((await client.alerts.get(rule.id)).channels[0].secret).toBeUndefined();

      const updated = await client.alerts.update(rule.id, { name: "Roles changed", threshold: { count: 2, window_seconds: 60 }, enabled: false });
      expect(updated).toMatchObject({ id: rule.id, name: "Roles changed", threshold: { count: 2, window_seconds: 60 }, enabled: false });
      expect(updated.channels[0].secret).toBeUndefined();
      expect(await client.alerts.get(rule.id)).toMatchObject({ name: "Roles changed", enabled: false });

      const test = await client.alerts.test(rule.id);
      expect(test).toMatchObject({ rule_id: rule.id, test: true, deliveries: [{ channel: 0, status: "delivered" }] });
      expect(JSON.parse(net.at(HOOK)[0].body).type).toBe("witness.alert.test");

      expect((await client.alerts.delete(rule.id)).id).toBe(rule.id);
      expect(await client.alerts.get(rule.id).catch((e) => e)).toMatchObject({ status: 404, code: "NOT_FOUND" });
      expect((await client.alerts.list()).map((r) => r.kind)).toEqual(["integrity"]);
      expect((await all(client.events.list({ actions: "witness.alert.created,witness.alert.updated,witness.alert.deleted" }))).map((e) => e.action)).toEqual([
        "witness.alert.deleted",
        "witness.alert.updated",
        "witness.alert.created",
      ]);

      // A read key reads; every change needs admin.
      const reader = createClient({ baseUrl: BASE, apiKey: (await createScopedKey(project.id, ["read"])).key, fetch: workerFetch() });
      const integrity = (await reader.alerts.list())[0];
      expect(await reader.alerts.get(integrity.id)).toMatchObject({ kind: "integrity" });
      const changes = [
        () => reader.alerts.create({ name: "x", channels: [] }),
        () => reader.alerts.update(integrity.id, { enabled: false }),
        () => reader.alerts.delete(integrity.id),
        () => reader.alerts.test(integrity.id),
      ];
      for (const change of changes) {
        const error = await change().catch((e) => e);
        expect(error).toBeInstanceOf(WitnessError);
        expect(error).toMatchObject({ status: 403, code: "FORBIDDEN", requiredScope: "admin" });
      }
      // An id no URL can name is refused before sending.
      expect(await all(client.alerts.firings("..")).catch((e) => e)).toMatchObject({ status: 400, code: "VALIDATION_ERROR" });
    }));

  it("pages through a rule's firings, newest first, as matching events are committed", async () => {
    const { client } = await clientFor();
    const rule = await client.alerts.create({ name: "Invoices", match: { actions: ["invoice.paid"] }, channels: [] });
    await client.events.createBatch([{ action: "invoice.paid", organization: "org_1" }, { action: "doc.read" }]);
    const [first] = await until(async () => {
      const got = await all(client.alerts.firings(rule.id));
      return got.length > 0 && got;
    });
    expect(first).toMatchObject({ rule_id: rule.id, rule_name: "Invoices", test: false, count: 1, deliveries: [] });
    expect(first.events.map((e) => [e.action, e.organization])).toEqual([["invoice.paid", "org_1"]]);
    await client.events.create({ action: "invoice.paid", organization: "org_2" });
    const both = await until(async () => {
      const got = await all(client.alerts.firings(rule.id, { limit: 1 }));
      return got.length > 1 && got;
    });
    expect(both.map((f) => f.events[0].organization)).toEqual(["org_2", "org_1"]);
    expect(both[0].id).toBeGreaterThan(both[1].id);
  });

  it("never retries a rule creation or a test notification whose answer may be lost", () =>
    withNetwork(async (net) => {
      const project = await createProject();
      const inner = workerFetch();
      let calls = 0;
      const flaky = createClient({
        baseUrl: BASE,
        apiKey: project.key,
        sleep: async () => {},
        fetch: async (url, init) => (calls++, await inner(url, init), new Response("", { status: 502 })),
      });
      expect(await flaky.alerts.create({ name: "once", channels: [{ type: "webhook", url: `https://${HOOK}/a` }] }).catch((e) => e)).toMatchObject({ status: 502 });
      expect(calls).toBe(1);
      const client = createClient({ baseUrl: BASE, apiKey: project.key, fetch: workerFetch() });
      const rules = await client.alerts.list();
      expect(rules.map((r) => r.name).sort()).toEqual(["Integrity of the trail", "once"]);
      calls = 0;
      expect(await flaky.alerts.test(rules.find((r) => r.name === "once")!.id).catch((e) => e)).toMatchObject({ status: 502 });
      expect(calls).toBe(1);
      expect(net.at(HOOK)).toHaveLength(1);
      // A read is retried.
      calls = 0;
      expect(await flaky.alerts.list().catch((e) => e)).toMatchObject({ status: 502 });
      expect(calls).toBe(5);
    }));
});

describe("@witness/client: portal links and erasures", () => {
  it("mints a portal link once, never retried, and reads an actor's erasures", async () => {
    const log: Request[] = [];
    const { project, client } = await clientFor({ fetch: workerFetch(log) });
    const link = await client.portal.createLink({ organization: "org_42", abilities: ["events", "streams"], ttl_seconds: 3600 });
    expect(link).toMatchObject({ organization: "org_42", abilities: ["events", "streams"] });
    expect(link.url).toMatch(/\/portal\/start#[A-Za-z0-9_-]{43}$/);
    await expect(client.portal.createLink({ organization: "", abilities: ["events"] })).rejects.toMatchObject({ code: "VALIDATION_ERROR" });
    expect(await client.actors.erasures("u_never")).toEqual([]);
    await call("POST", "/v1/events", { key: project.key, body: { action: "doc.read", actor: { id: "u_gone" } } });
    await client.actors.erase("u_gone");
    const erasures = await until(async () => {
      const found = await client.actors.erasures("u_gone");
      return found.length === 1 && found[0].status === "applied" ? found : null;
    });
    expect(erasures[0]).toMatchObject({ by: "id", status: "applied", anonymized: 1 });
    expect(log.filter((r) => r.method === "POST" && new URL(r.url).pathname === "/v1/portal/links")).toHaveLength(2);
  });
});

describe("backoff", () => {
  it("doubles up to the cap, with jitter in the upper half", () => {
    const opts = { minDelayMs: 100, maxDelayMs: 1000 };
    expect(backoffMs(0, opts, () => 0)).toBe(50);
    expect(backoffMs(0, opts, () => 1)).toBe(100);
    expect(backoffMs(3, opts, () => 1)).toBe(800);
    expect(backoffMs(9, opts, () => 1)).toBe(1000);
    expect(retryAfterMs("3")).toBe(3000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4_000)).toBe(6000);
    expect(retryAfterMs(null)).toBeNull();
  });
});
