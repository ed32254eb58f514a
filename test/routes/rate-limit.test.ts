import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { generateApiKey } from "../../src/auth/api-keys";
import { COSTS } from "../../src/auth/rate-cost";
import { call, createProject, ingest } from "../helpers";

const INGEST_LIMIT = 1200;
const OTHER_LIMIT = 1500;

describe("rate limits", () => {
  it("sends RateLimit-* headers on successes and errors alike", async () => {
    const p = await createProject();
    const ok = await ingest(p.key, { action: "a" });
    expect(ok.headers.get("RateLimit-Limit")).toBe(String(INGEST_LIMIT));
    expect(ok.headers.get("RateLimit-Remaining")).toBe(String(INGEST_LIMIT - 1));
    expect(Number(ok.headers.get("RateLimit-Reset"))).toBeGreaterThanOrEqual(1);
    expect(Number(ok.headers.get("RateLimit-Reset"))).toBeLessThanOrEqual(60);
    const ip = "198.51.100.77";
    for (const res of [
      await call("GET", "/v1/events/nope", { key: p.key, ip }),
      await call("GET", "/v1/unknown", { ip }),
      await call("POST", "/v1/events", { body: { action: "a" }, ip }),
      await ingest(p.key, {}),
    ]) {
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.headers.get("RateLimit-Limit")).toMatch(/^\d+$/);
      expect(res.headers.get("RateLimit-Remaining")).toMatch(/^\d+$/);
      expect(res.headers.get("RateLimit-Reset")).toMatch(/^\d+$/);
      expect(Number(res.headers.get("RateLimit-Reset"))).toBeLessThanOrEqual(60);
    }
  });

  it("allows 1200 ingest requests a minute per key, then 429 with Retry-After and nothing stored", async () => {
    const p = await createProject();
    // A batch request counts as one request.
    const batch = await call("POST", "/v1/events/batch", { key: p.key, body: { events: [{ action: "a" }, { action: "b" }] } });
    expect(batch.headers.get("RateLimit-Remaining")).toBe(String(INGEST_LIMIT - 1));
    let statuses: number[] = [];
    for (let sent = 1; sent < INGEST_LIMIT; sent += 100) {
      const wave = await Promise.all(Array.from({ length: Math.min(100, INGEST_LIMIT - sent) }, () => ingest(p.key, { action: "flood" })));
      statuses = statuses.concat(wave.map((r) => r.status));
    }
    expect(statuses.every((s) => s === 201)).toBe(true);
    const refused = await ingest(p.key, { action: "one.too.many" });
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe("RATE_LIMITED");
    expect(refused.headers.get("RateLimit-Remaining")).toBe("0");
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
    const stored = await p.db.prepare("SELECT COUNT(*) AS n FROM events WHERE project_id = ? AND action = 'one.too.many'").bind(p.id).first<{ n: number }>();
    expect(stored!.n).toBe(0);
    // The budget is per key: another key of another project is unaffected, and reads are counted per IP.
    const other = await createProject();
    expect((await ingest(other.key, { action: "fine" })).status).toBe(201);
    expect((await call("GET", "/v1/events/x", { key: p.key })).status).toBe(404);
  });

  it("allows 1500 other requests a minute per IP, then 429", async () => {
    const p = await createProject();
    const ip = "192.0.2.200";
    const started = Date.now();
    let last = 0;
    let lowest = Infinity;
    let resets: number[] = [];
    // The first wave reads with a key; the rest ask for a path no route has, which the budget counts alike
    // and which costs the runtime far less (this test sends the most requests of the suite).
    for (let sent = 0; sent < OTHER_LIMIT; sent += 100) {
      const wave = await Promise.all(Array.from({ length: 100 }, () => (sent === 0 ? call("GET", "/v1/events/missing", { key: p.key, ip }) : call("GET", "/nowhere", { ip }))));
      last = Math.max(...wave.map((r) => Number(r.headers.get("RateLimit-Remaining") === "0")));
      lowest = Math.min(lowest, ...wave.map((r) => Number(r.headers.get("RateLimit-Remaining"))));
      resets = [...new Set(wave.map((r) => Number(r.headers.get("RateLimit-Reset"))))];
      expect(wave.every((r) => r.status === 404)).toBe(true);
    }
    // The window is a minute from the IP's first request: a run slower than that (a loaded machine) starts a new one.
    expect(last, `lowest RateLimit-Remaining ${lowest} after ${Date.now() - started} ms; the last wave's RateLimit-Reset: ${resets.join(", ")}`).toBe(1);
    const refused = await call("GET", "/v1/events/missing", { key: p.key, ip });
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe("RATE_LIMITED");
    expect(refused.headers.get("Retry-After")).toMatch(/^\d+$/);
    // Ingest is not counted per IP.
    expect((await ingest(p.key, { action: "still.fine" }, { ip })).status).toBe(201);
  });

  it("refuses a burst before any D1 work: refused reads never even look up their key", async () => {
    const ip = `burst-${crypto.randomUUID()}`;
    // 60 projects whose keys this isolate has never seen, so each request would have to look its key up.
    const projects = await Promise.all(Array.from({ length: 60 }, () => createProject()));
    // Leave 20 units with requests that touch nothing: verifies without a key (priced before the key is
    // known, and refused 401 without a lookup), then paths no route has.
    const verifies = Math.floor((OTHER_LIMIT - 20) / COSTS.verify);
    await Promise.all(Array.from({ length: verifies }, () => call("GET", "/v1/events/verify", { ip })));
    const rest = OTHER_LIMIT - 20 - verifies * COSTS.verify;
    await Promise.all(Array.from({ length: rest }, () => call("GET", "/nowhere", { ip })));
    const burst = await Promise.all(projects.map((p) => call("GET", "/v1/events/search?q=burst", { key: p.key, ip })));
    // Revoke every key. A key some request looked up stays cached as valid for seconds (404 for a missing
    // event); a key no request looked up is read now, revoked (401). So 401 marks the requests that did no D1 work.
    const prefixes = projects.map((p) => p.prefix);
    await env.DB.prepare(`UPDATE api_keys SET revoked_at = ? WHERE prefix IN (${prefixes.map(() => "?").join(",")})`)
      .bind(new Date().toISOString(), ...prefixes)
      .run();
    const after = await Promise.all(projects.map((p) => call("GET", "/v1/events/missing", { key: p.key })));
    expect(after.map((r) => r.status)).toEqual(burst.map((r) => (r.status === 200 ? 404 : 401)));
    expect(burst.filter((r) => r.status === 200)).toHaveLength(20 / COSTS.search);
    expect(burst.every((r) => r.status === 200 || r.json.error.code === "RATE_LIMITED")).toBe(true);
  });

  it("asks D1 about an unknown key once, so a flood of it from many IPs makes no further queries", async () => {
    const p = await createProject();
    const unknown = await generateApiKey();
    const flood = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 ? call("GET", "/v1/events", { key: unknown.key }) : ingest(unknown.key, { action: "a" }))),
    );
    expect(flood.every((r) => r.status === 401)).toBe(true);
    // The key exists now: a lookup would find it, the remembered answer does not look. A key never presented works.
    const control = await generateApiKey();
    for (const k of [unknown, control]) {
      await env.DB.prepare("INSERT INTO api_keys (prefix, project_id, secret_hash, created_at) VALUES (?, ?, ?, ?)")
        .bind(k.prefix, p.id, k.secretHash, new Date().toISOString())
        .run();
    }
    expect((await call("GET", "/v1/events", { key: unknown.key })).status).toBe(401);
    expect((await ingest(unknown.key, { action: "a" })).status).toBe(401);
    expect((await call("GET", "/v1/events", { key: control.key })).status).toBe(200);
  });

  it("charges search, verify and export more units, and refuses a request costing more than is left", async () => {
    const p = await createProject();
    const ip = `cost-${crypto.randomUUID()}`;
    const left = (res: { headers: Headers }) => Number(res.headers.get("RateLimit-Remaining"));
    const search = await call("GET", "/v1/events/search?q=ab", { key: p.key, ip });
    expect([search.status, left(search)]).toEqual([200, OTHER_LIMIT - COSTS.search]);
    const verify = await call("GET", "/v1/events/verify", { key: p.key, ip });
    expect([verify.status, left(verify)]).toEqual([200, left(search) - COSTS.verify]);
    const exported = await call("GET", "/v1/exports?format=json", { key: p.key, ip });
    expect([exported.status, left(exported)]).toEqual([200, left(verify) - COSTS.export]);
    const list = await call("GET", "/v1/events", { key: p.key, ip });
    expect([list.status, left(list)]).toEqual([200, left(exported) - 1]);
    // The price is paid before the key is known: verifies without one spend 20 each.
    let remaining = left(list);
    while (remaining >= 10 + COSTS.verify) remaining = left(await call("GET", "/v1/events/verify", { ip }));
    while (remaining > 10) remaining = left(await call("GET", "/nowhere", { ip }));
    const refused = await call("GET", "/v1/events/verify", { key: p.key, ip });
    expect(refused.status).toBe(429);
    expect(refused.json.error).toMatchObject({ code: "RATE_LIMITED", details: { cost: COSTS.verify } });
    expect(left(refused)).toBe(10);
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
    // What is left still pays for cheaper requests.
    const cheaper = await call("GET", "/v1/events/search?q=ab", { key: p.key, ip });
    expect([cheaper.status, left(cheaper)]).toEqual([200, 10 - COSTS.search]);
    const last = await call("GET", "/v1/events/search?q=ab", { key: p.key, ip });
    expect([last.status, left(last)]).toEqual([200, 0]);
    expect((await call("GET", "/v1/events", { key: p.key, ip })).status).toBe(429);
  });
});
