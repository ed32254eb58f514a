import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import app from "../../src/app";
import { verifyChunked } from "../../src/chain/verify-run";
import { BASE, call, createProject, dbOf, freshIp, ingest } from "../helpers";

/**
 * Generated requests against every route of the app: bodies, headers, query
 * strings and path parameters from a seeded PRNG, so every run sends the same
 * requests (change SEED locally to explore others; a failure prints the
 * request). No answer may be a 5xx, and a refused request must leave the
 * project's data as it was.
 */
const SEED = 20261123;
const ROUNDS = 1200;
/** Reads run this many at a time (they change nothing); writes one by one, each checked. */
const READ_CONCURRENCY = 12;

/** mulberry32: small, fast, deterministic. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(list: readonly T[]): T => list[int(list.length)];
  const chance = (p: number) => next() < p;
  return { next, int, pick, chance };
}
type Rng = ReturnType<typeof prng>;

/** Concrete routes (method, path) of the app, from Hono's own table: middleware (ALL) left out. */
export function appRoutes(): { method: string; path: string }[] {
  const seen = new Set<string>();
  const out: { method: string; path: string }[] = [];
  for (const r of app.routes) {
    if (r.method === "ALL") continue;
    const id = `${r.method} ${r.path}`;
    if (seen.has(id)) continue;
    seen.add(id);
    out.push({ method: r.method, path: r.path });
  }
  return out;
}

const ODD_STRINGS = [
  "",
  " ",
  "a",
  "null",
  "undefined",
  "0",
  "-1",
  "1e309",
  "NaN",
  "true",
  "[]",
  "{}",
  "..",
  "../../etc/passwd",
  "%",
  "%zz",
  "%00",
  "%2F",
  "%E2%82",
  "\u0000",
  "\uFFFF",
  "\uD800",
  "😀",
  "José",
  "ا",
  "<script>alert(1)</script>",
  "' OR 1=1 --",
  '"; DROP TABLE events; --',
  "NEAR(a b)",
  "*",
  "a*",
  "\"quoted\"",
  "2026-05-05T05:05:05Z",
  "2026-05-05T05:05:05",
  "2026-02-30T00:00:00Z",
  "9999-12-31T23:59:59Z",
  "0000-01-01T00:00:00Z",
  "2026-05-05T05:05:05.000Z~1",
  "2026-05-05T05:05:05.000Z~-1",
  "~",
  "csv",
  "json",
  "xml",
  "email",
  "id",
  "00000000-0000-0000-0000-000000000000",
  "0b6c3c6e-1d2f-4a5b-8c7d-9e0f1a2b3c4d",
];

function randomText(r: Rng, max = 40): string {
  const kind = r.int(6);
  if (kind === 0) return r.pick(ODD_STRINGS);
  if (kind === 1) return "x".repeat(r.pick([254, 255, 256, 1000, 5000, 70_000]));
  const length = r.int(max);
  let s = "";
  for (let i = 0; i < length; i++) {
    const c = r.int(10);
    if (c < 6) s += String.fromCharCode(0x61 + r.int(26));
    else if (c < 8) s += String.fromCharCode(0x20 + r.int(95));
    else if (c < 9) s += String.fromCharCode(0x80 + r.int(0x700));
    else s += String.fromCodePoint(r.pick([0x0, 0x7f, 0x85, 0x2028, 0xfeff, 0x1f600, 0xd800, 0xdfff]));
  }
  return s;
}

/** Printable ASCII: what a Headers object takes without the runtime re-encoding it (and warning). */
function headerText(r: Rng, max = 60): string {
  let s = "";
  const length = r.int(max);
  for (let i = 0; i < length; i++) s += String.fromCharCode(0x20 + r.int(95));
  return s.trim();
}

function randomJson(r: Rng, depth = 0): unknown {
  const kind = r.int(depth > 3 ? 5 : 8);
  switch (kind) {
    case 0:
      return null;
    case 1:
      return r.chance(0.5);
    case 2:
      return r.pick([0, -1, 1.5, 1e21, -0, Number.MAX_SAFE_INTEGER + 2, 255, 36501, 3600, 59]);
    case 3:
    case 4:
      return randomText(r);
    case 5:
    case 6: {
      const o: Record<string, unknown> = {};
      const n = r.int(5);
      for (let i = 0; i < n; i++) o[r.chance(0.6) ? r.pick(FIELD_NAMES) : randomText(r, 10)] = randomJson(r, depth + 1);
      return o;
    }
    default:
      return Array.from({ length: r.int(4) }, () => randomJson(r, depth + 1));
  }
}

const FIELD_NAMES = [
  "action", "organization", "actor", "targets", "metadata", "occurred_at", "id", "type", "name", "email",
  "events", "rules", "pattern", "days", "ttl_seconds", "include_metadata", "url", "token", "filter", "from_seq",
  "shard", "hash", "seq", "__proto__", "constructor",
];

/** A valid event, then a few mutations: most bodies get past JSON parsing and meet the validators. */
function eventLike(r: Rng): Record<string, unknown> {
  const e: Record<string, unknown> = {
    action: r.chance(0.8) ? `fuzz.${r.int(20)}` : randomText(r),
    organization: r.chance(0.5) ? `org_${r.int(3)}` : undefined,
    actor: r.chance(0.6) ? { id: `u_${r.int(10)}`, type: "user", name: "Ada", email: "ada@example.com" } : undefined,
    targets: r.chance(0.4) ? [{ type: "doc", id: String(r.int(100)) }] : undefined,
    metadata: r.chance(0.4) ? { k: r.int(5) } : undefined,
    occurred_at: r.chance(0.3) ? r.pick(ODD_STRINGS.filter((s) => /^\d{4}-/.test(s))) : undefined,
  };
  const mutations = r.int(3);
  for (let i = 0; i < mutations; i++) {
    const field = r.pick(FIELD_NAMES);
    if (r.chance(0.2)) delete e[field];
    else if (field === "actor" || field === "targets") e[field] = r.chance(0.5) ? randomJson(r) : [randomJson(r)];
    else e[field] = randomJson(r);
  }
  return e;
}

function bodyFor(r: Rng): { body?: BodyInit; declaredJson: boolean } {
  const kind = r.int(12);
  const enc = (s: string) => new TextEncoder().encode(s);
  switch (kind) {
    case 0:
      return { declaredJson: r.chance(0.5) };
    case 1:
      return { body: "", declaredJson: true };
    case 2:
      return { body: JSON.stringify(randomJson(r)), declaredJson: true };
    case 3: {
      const text = JSON.stringify(eventLike(r));
      return { body: text.slice(0, r.int(text.length)), declaredJson: true }; // truncated
    }
    case 4: {
      const bytes = Uint8Array.from({ length: r.int(64) }, () => r.int(256));
      return { body: bytes, declaredJson: r.chance(0.8) };
    }
    case 5: {
      const good = enc(JSON.stringify(eventLike(r)));
      const bad = new Uint8Array(good.length + 2);
      const at = Math.max(1, r.int(good.length));
      bad.set(good.subarray(0, at));
      bad.set(r.pick([[0xff, 0xfe], [0xc0, 0xaf], [0xed, 0xa0], [0x80, 0x80]]), at);
      bad.set(good.subarray(at), at + 2);
      return { body: bad, declaredJson: true };
    }
    case 6:
      return { body: JSON.stringify({ events: Array.from({ length: r.pick([0, 1, 2, 3, 101]) }, () => eventLike(r)) }), declaredJson: true };
    case 7:
      return { body: JSON.stringify({ rules: Array.from({ length: r.int(4) }, () => ({ pattern: randomJson(r), days: randomJson(r) })) }), declaredJson: true };
    case 8:
      // Duplicate keys, deep nesting, a BOM: text JSON.stringify never writes.
      return {
        body: r.pick([
          '{"action":"a","action":"b"}',
          `{"action":"deep","metadata":${"[".repeat(3000)}${"]".repeat(3000)}}`,
          "\uFEFF{\"action\":\"bom\"}",
          '{"action":"a"} trailing',
          '{"action":"a",}',
          "[{\"action\":\"a\"}]",
          '{"__proto__":{"polluted":true},"action":"proto"}',
        ]),
        declaredJson: true,
      };
    default:
      return { body: JSON.stringify(eventLike(r)), declaredJson: r.chance(0.9) };
  }
}

const QUERY_NAMES = [
  "limit", "cursor", "organization", "actor_id", "action", "actions", "actions_exclude", "ip_address",
  "date_from", "date_to", "q", "format", "from", "to", "by", "token", "page", "include_metadata",
];

/** Lone surrogates replaced: encodeURIComponent cannot encode them. */
const wellFormed = (s: string) => s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "?");

function queryFor(r: Rng): string {
  const parts: string[] = [];
  const n = r.int(5);
  for (let i = 0; i < n; i++) {
    const name = r.chance(0.85) ? r.pick(QUERY_NAMES) : encodeURIComponent(wellFormed(randomText(r, 8)));
    const raw = r.chance(0.3) ? String(r.pick([0, 1, 50, 200, 201, -5, 1e9])) : randomText(r, 20);
    // Sometimes the raw text, malformed percent-escapes and all.
    const value = r.chance(0.2) ? raw.replace(/[#&\s]/g, "") : encodeURIComponent(wellFormed(raw));
    parts.push(`${name}=${value}`);
    if (r.chance(0.1)) parts.push(`${name}=${value}`); // the same parameter twice
  }
  return parts.length ? `?${parts.join("&")}` : "";
}

interface Fixture {
  key: string;
  embedToken: string;
  eventId: string;
  logId: string;
}

function pathFor(r: Rng, template: string, f: Fixture): string {
  const segment = () => {
    if (r.chance(0.3)) return r.pick([f.eventId, f.logId, crypto.randomUUID()]);
    const text = randomText(r, 30);
    return r.chance(0.7) ? encodeURIComponent(wellFormed(text)) : text.replace(/[/?#\s]/g, "").replace(/[^\x21-\x7e]/g, "%ff");
  };
  return template
    .replace(/:logId/g, () => (r.chance(0.6) ? f.logId : segment()))
    .replace(/:id/g, () => (r.chance(0.4) ? f.eventId : segment()))
    .replace(/\*/g, () =>
      r.pick([
        "0/0",
        "0/000",
        "1/x001",
        "0/000.p/1",
        "0/000.p/0",
        "0/000.p/256",
        "9/999",
        "0/x999/x999/999",
        "entries/000",
        segment(),
        `${segment()}/${segment()}`,
      ]),
    );
}

/** This file's few client addresses (a /24 of freshIp()). */
const FUZZ_NET = freshIp().split(".").slice(0, 3).join(".");

function headersFor(r: Rng, f: Fixture, declaredJson: boolean): Record<string, string> {
  // A few client addresses: each has its own rate-limiter object, and making one per request would be most of the cost.
  const h: Record<string, string> = { "CF-Connecting-IP": `${FUZZ_NET}.${r.int(16)}` };
  const auth = r.int(10);
  if (auth < 6) h.Authorization = `Bearer ${f.key}`;
  else if (auth === 6) h.Authorization = `Bearer ${f.embedToken}`;
  else if (auth === 7) h.Authorization = r.pick([`Bearer ${f.key.slice(0, -1)}X`, `Bearer ${f.embedToken.slice(0, -2)}`, "Bearer ", "Basic Zm9vOmJhcg==", `bearer ${f.key}`]);
  else if (auth === 8) h.Authorization = headerText(r);
  if (declaredJson) h["Content-Type"] = r.pick(["application/json", "application/json; charset=utf-8", "APPLICATION/JSON", "application/json;charset=latin1"]);
  else if (r.chance(0.5)) h["Content-Type"] = r.pick(["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx", headerText(r, 20)]);
  if (r.chance(0.2)) h["Idempotency-Key"] = r.chance(0.8) ? headerText(r, 300) : `fuzz-${r.int(4)}`;
  if (r.chance(0.1)) h["If-None-Match"] = headerText(r, 30);
  if (r.chance(0.1)) h.Origin = r.pick(["https://app.example.com", "null", headerText(r, 30)]);
  if (r.chance(0.1)) h["User-Agent"] = headerText(r, 400);
  if (r.chance(0.05)) h["Accept-Encoding"] = headerText(r, 20);
  if (r.chance(0.05)) h[`X-${headerText(r, 10).replace(/[^A-Za-z0-9-]/g, "") || "Fuzz"}`] = headerText(r);
  return h;
}

/** Everything a refused request must leave as it was, for one project. */
async function snapshot(projectId: string, db: D1Database, hasStreams: boolean) {
  const rows = await Promise.all([
    db.prepare("SELECT count(*) AS n, coalesce(max(seq), 0) AS head, coalesce(sum(anonymized_at IS NOT NULL), 0) AS anonymized FROM events WHERE project_id = ?").bind(projectId).first(),
    db.prepare("SELECT count(*) AS n FROM idempotency_keys WHERE project_id = ?").bind(projectId).first(),
    env.DB.prepare(
      "SELECT (SELECT group_concat(pattern || ':' || days) FROM retention_rules WHERE project_id = ?1) AS plan, " +
        "(SELECT count(*) FROM api_keys WHERE project_id = ?1 AND revoked_at IS NULL) AS live_keys" +
        (hasStreams ? ", (SELECT count(*) FROM streams WHERE project_id = ?1) AS streams" : ""),
    )
      .bind(projectId)
      .first(),
  ]);
  return JSON.stringify(rows);
}

interface Planned {
  i: number;
  route: string;
  method: string;
  url: string;
  request: Request;
}

async function jobEnded(db: D1Database, id: string) {
  for (let i = 0; i < 2000; i++) {
    const job = await db.prepare("SELECT status FROM jobs WHERE id = ?").bind(id).first<{ status: string }>();
    if (job && !["queued", "running"].includes(job.status)) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`erasure job ${id} never ended`);
}

describe("fuzz", () => {
  it("lists the app's routes from its route table", () => {
    const routes = appRoutes().map((r) => `${r.method} ${r.path}`);
    // A few that must be there; the fuzz below covers whatever else the table holds.
    for (const r of ["POST /v1/events", "POST /v1/events/batch", "GET /v1/events", "GET /v1/events/:id", "PUT /v1/retention", "DELETE /v1/actors/:id"]) {
      expect(routes).toContain(r);
    }
  });

  it(`answers ${ROUNDS} generated requests over every route with no 5xx, and refused ones store nothing`, { timeout: 120_000 }, async () => {
    const p = await createProject();
    const seeded = await ingest(p.key, { action: "fuzz.seed", actor: { id: "u_seed", type: "user" } });
    expect(seeded.status).toBe(201);
    const token = await call("POST", "/v1/embed/token", { key: p.key, body: {} });
    const log = await call("GET", "/v1/log", { key: p.key });
    const fixture: Fixture = { key: p.key, embedToken: token.json.data.token, eventId: seeded.json.data.id, logId: log.json.data.log_id };

    const routes = appRoutes();
    const r = prng(SEED);
    // All requests are drawn first, so the same seed gives the same requests whatever the answers.
    const planned: Planned[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const route = routes[i % routes.length];
      const method = r.chance(0.05) ? r.pick(["OPTIONS", "HEAD", "PATCH", "PUT", "DELETE", "POST", "GET"]) : route.method;
      const { body, declaredJson } = bodyFor(r);
      const url = `${BASE}${pathFor(r, route.path, fixture)}${queryFor(r)}`;
      const headers = headersFor(r, fixture, declaredJson);
      const sendsBody = method !== "GET" && method !== "HEAD" && body !== undefined;
      try {
        planned.push({ i, route: `${route.method} ${route.path}`, method, url, request: new Request(url, { method, headers, body: sendsBody ? body : undefined }) });
      } catch {
        // a URL the client side itself refuses to send
      }
    }

    const db = await dbOf(p.id);
    const hasStreams = !!(await env.DB.prepare("SELECT 1 AS ok FROM sqlite_master WHERE name = 'streams'").first());
    const failures: string[] = [];
    const statuses = new Map<string, number>();
    let created = 1;
    const send = async (q: Planned) => {
      const res = await exports.default.fetch(q.request);
      const bytes = new Uint8Array(await res.arrayBuffer());
      const tag = `${q.route} -> ${res.status}`;
      statuses.set(tag, (statuses.get(tag) ?? 0) + 1);
      const text = new TextDecoder().decode(bytes.subarray(0, 2000));
      if (res.status >= 500) failures.push(`#${q.i} ${q.method} ${q.url.slice(0, 300)} -> ${res.status} ${text.slice(0, 300)}`);
      return { status: res.status, bytes };
    };
    let before = await snapshot(p.id, db, hasStreams);
    for (let at = 0; at < planned.length && failures.length < 10; ) {
      const reads: Planned[] = [];
      while (at < planned.length && reads.length < READ_CONCURRENCY && ["GET", "HEAD", "OPTIONS"].includes(planned[at].method)) reads.push(planned[at++]);
      if (reads.length > 0) {
        await Promise.all(reads.map(send));
        continue;
      }
      const q = planned[at++];
      const { status, bytes } = await send(q);
      // An erasure is accepted (202) and applied by its job, which appends its witness.actor.erased record when done: wait for it.
      if (status === 202 && new URL(q.url).pathname.startsWith("/v1/actors/")) await jobEnded(db, JSON.parse(new TextDecoder().decode(bytes)).data.job_id);
      const after = await snapshot(p.id, db, hasStreams);
      if (status >= 400 && after !== before) failures.push(`#${q.i} ${q.method} ${q.url.slice(0, 200)} was refused (${status}) but changed ${before} -> ${after}`);
      if (status === 201 && /^\/v1\/events(\/batch)?$/.test(new URL(q.url).pathname)) {
        created += /\/batch$/.test(new URL(q.url).pathname) ? JSON.parse(new TextDecoder().decode(bytes)).data.length : 1;
      }
      before = after;
    }
    expect(failures).toEqual([]);
    // Everything stored came from a 201 (admin actions that took effect add their own witness.* records), and the chain still verifies.
    const stored = await (await dbOf(p.id))
      .prepare("SELECT count(*) AS n FROM events WHERE project_id = ? AND action NOT LIKE 'witness.%'")
      .bind(p.id)
      .first<{ n: number }>();
    expect(stored!.n).toBe(created);
    // The engine of GET /v1/events/verify, called directly: the fuzz has spent the project's verify budget.
    expect(await verifyChunked(env, p.id, { from: null, to: null })).toMatchObject({ ok: true });
    // Every route was reached, and not only refused at the door.
    const reached = new Set([...statuses.keys()].map((t) => t.replace(/ -> \d+$/, "")));
    for (const route of routes) expect(reached).toContain(`${route.method} ${route.path}`);
    const passedAuth = [...statuses.entries()].filter(([t]) => !/ -> (401|403|429)$/.test(t)).reduce((n, [, c]) => n + c, 0);
    expect(passedAuth).toBeGreaterThan(planned.length / 2);
  });
});
