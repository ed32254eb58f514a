import { env, exports } from "cloudflare:workers";
import { expect } from "vitest";
import { generateApiKey } from "../src/auth/api-keys";
import { createProject as placeProject } from "../src/storage/projects";
import { eventsDb, forgetShard } from "../src/storage/shards";
import { keyedRowId, OLDER_TOP } from "../src/model/row-keys";
import { COLUMNS, insertEventsStatements } from "../src/chain/event-insert";
import { INDEXING_COLUMNS } from "../src/model/row-indexing";
import { armDb } from "../src/model/periods";
import type { EventRow } from "../src/db/schema";
import { checkResponse } from "./openapi/contract";

export const BASE = "https://witness.test";

/**
 * A fresh project with its own key, placed as the service places it (the
 * least-full shard) unless a shard is given. db is its event database: tests
 * that play a database writer tamper there.
 *
 * Its keys (here and in createScopedKey) stand for keys the service made
 * (audit_state 'created', as POST /v1/keys leaves it), though no event records
 * that: the daily cron's sweep (src/auth/key-audit.ts) appends
 * witness.key.created only for keys an operator script wrote into D1, so the
 * events a test counts after running the cron are its own.
 * test/auth/key-audit.test.ts makes keys as the scripts do. `keyed: false` makes it as projects made before
 * keyed row ids are (model/row-keys.ts): its number taken away before its first event, and this isolate's
 * cached place with it.
 */
export async function createProject(name = `p-${crypto.randomUUID()}`, options: { shard?: number; keyed?: false } = {}) {
  const { key, prefix, secretHash } = await generateApiKey();
  const shard = await placeProject(env, name, options.shard);
  if (options.keyed === false) {
    await (await eventsDb(env, name)).prepare("DELETE FROM project_keys WHERE project_id = ?").bind(name).run();
    forgetShard(name);
  }
  await env.DB.prepare("INSERT INTO api_keys (prefix, project_id, secret_hash, created_at, audit_state) VALUES (?, ?, ?, ?, 'created')")
    .bind(prefix, name, secretHash, new Date().toISOString())
    .run();
  return { id: name, key, prefix, shard, db: await eventsDb(env, name) };
}

/** Another key of an existing project, holding only these scopes (as an admin would mint it). */
export async function createScopedKey(projectId: string, scopes: Array<"ingest" | "read" | "admin">, options: { expiresAt?: string } = {}) {
  const { key, prefix, secretHash } = await generateApiKey();
  await env.DB.prepare("INSERT INTO api_keys (prefix, project_id, secret_hash, created_at, scopes, expires_at, audit_state) VALUES (?, ?, ?, ?, ?, ?, 'created')")
    .bind(prefix, projectId, secretHash, new Date().toISOString(), scopes.join(","), options.expiresAt ?? null)
    .run();
  return { key, prefix };
}

/** The event database of a project. */
export function dbOf(projectId: string): Promise<D1Database> {
  return eventsDb(env, projectId);
}

const octet = (n: number) => Math.floor(Math.random() * n);

/**
 * A client address no other test uses. Per-IP budgets belong to the runtime, and test files share
 * one (test/vitest.config.ts): a test that counts what is left of an address's budget, or spends a
 * lot of it, takes one of these. (call()'s default is another address each call: nextIp().)
 */
export function freshIp(): string {
  return `10.${100 + octet(150)}.${octet(250)}.${octet(250)}`;
}

/**
 * call()'s default client address: a new one each call, from 10.0.0.0-10.99.255.255 (freshIp takes
 * the rest of 10/8), counted on the runtime's global so files sharing a runtime never repeat one.
 * A repeat was not harmless: an isolate holding leased units for an address answers its next
 * request without asking the limiter (src/auth/rate-lease.ts), one subrequest fewer, and a test
 * counting a request's subrequests failed once in a full run (a random 10.0.x.y: 62,500 of them).
 */
function nextIp(): string {
  const g = globalThis as { witnessTestIp?: number };
  const n = (g.witnessTestIp = ((g.witnessTestIp ?? octet(1 << 20)) + 1) % (100 << 16));
  return `10.${n >> 16}.${(n >> 8) & 255}.${n & 255}`;
}

export interface CallOptions {
  key?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
  ip?: string;
}

/** Calls the worker's own fetch handler, as a client over HTTP would. */
export async function call(method: string, path: string, options: CallOptions = {}) {
  const headers: Record<string, string> = {
    "CF-Connecting-IP": options.ip ?? nextIp(),
    ...(options.key ? { Authorization: `Bearer ${options.key}` } : {}),
    ...(options.body !== undefined ? { "Content-Type": "application/json" } : {}),
    ...options.headers,
  };
  const body = options.body === undefined ? undefined : typeof options.body === "string" ? options.body : JSON.stringify(options.body);
  const res = await exports.default.fetch(new Request(`${BASE}${path}`, { method, headers, body }));
  const text = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  // Contract test: every response must be one the OpenAPI document describes.
  checkResponse(await openApiDocument(), { method, path, status: res.status, contentType: res.headers.get("Content-Type"), text });
  return { status: res.status, headers: res.headers, json, text };
}

let openApiDoc: Promise<any> | null = null;

/** The worker's own GET /openapi.json, fetched once (from an address no test limits). */
export function openApiDocument(): Promise<any> {
  openApiDoc ??= exports.default
    .fetch(new Request(`${BASE}/openapi.json`, { headers: { "CF-Connecting-IP": "10.255.255.254" } }))
    .then((res) => res.json());
  return openApiDoc;
}

export function ingest(key: string, event: unknown, options: Omit<CallOptions, "key" | "body"> = {}) {
  return call("POST", "/v1/events", { ...options, key, body: event });
}

/** Ingests events through POST /v1/events/batch, 100 per call; returns the stored events in chain order. */
export async function ingestMany(key: string, events: unknown[], options: Omit<CallOptions, "key" | "body"> = {}) {
  const stored: any[] = [];
  for (let i = 0; i < events.length; i += 100) {
    const res = await call("POST", "/v1/events/batch", { ...options, key, body: { events: events.slice(i, i + 100) } });
    if (res.status !== 201) throw new Error(`batch ingest answered ${res.status}: ${res.text}`);
    stored.push(...res.json.data);
  }
  return stored;
}

/** An event as list order sees it. */
export type Listed = { seq: number; occurred_at: string };

/** The seqs of `sent` that `keep` accepts, in list order: newest occurred_at first, then the higher seq. */
export function listOrder<T extends Listed>(sent: T[], keep: (e: T) => boolean): number[] {
  return sent
    .filter(keep)
    .sort((a, b) => (a.occurred_at === b.occurred_at ? b.seq - a.seq : a.occurred_at < b.occurred_at ? 1 : -1))
    .map((e) => e.seq);
}

/** Every page of a list or search (`path?query`), pages of `limit`, following nextCursor: the seqs in the order served. */
export async function listPages(key: string, path: string, query: string, limit: number): Promise<number[]> {
  const seqs: number[] = [];
  let cursor: string | null = null;
  do {
    const page = await call("GET", `${path}?${query}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { key });
    if (page.status !== 200) throw new Error(`${path}?${query} answered ${page.status}: ${page.text}`);
    seqs.push(...page.json.data.map((e: Listed) => e.seq));
    cursor = page.json.nextCursor;
  } while (cursor);
  return seqs;
}

/**
 * Pages through each read (a /v1/events query and the events it keeps) at each page size, and holds
 * every listing to those events in list order. The listings only read, so they all run at once:
 * files made of these were the suite's slowest, waiting on one page after another. Pages of 1 put a
 * cursor after every event, pages of 3 hold rows from either side of a span's or set's edge, and 200
 * reads the whole listing in one page.
 */
export async function expectEveryListing<T extends Listed>(key: string, sent: T[], reads: Array<[string, (e: T) => boolean]>, limits = [1, 3, 200]): Promise<void> {
  const listings = reads.flatMap(([query, keep]) => limits.map((limit) => ({ query, limit, want: listOrder(sent, keep) })));
  const got = await Promise.all(listings.map(({ query, limit }) => listPages(key, "/v1/events", query, limit)));
  listings.forEach(({ query, limit, want }, i) => expect(got[i], `${query} by ${limit}`).toEqual(want));
}

/**
 * One read with `key` now: an isolate looks a key up once per KEY_CACHE_SECONDS, so a test that
 * counts a request's queries and subrequests makes the lookup before it starts counting.
 */
export async function warmKey(key: string): Promise<void> {
  expect((await call("GET", "/v1/events?limit=1", { key })).status).toBe(200);
}

/** A strict RFC 4180 reader for checking exports: CRLF rows, quoted fields with doubled quotes. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let i = 0;
  while (i < text.length) {
    let field = "";
    if (text[i] === '"') {
      i++;
      for (;;) {
        if (i >= text.length) throw new Error("unterminated quoted field");
        if (text[i] === '"' && text[i + 1] === '"') (field += '"'), (i += 2);
        else if (text[i] === '"') break;
        else field += text[i++];
      }
      i++;
    } else {
      while (i < text.length && text[i] !== "," && text[i] !== "\r" && text[i] !== "\n") {
        if (text[i] === '"') throw new Error(`bare quote in unquoted field at ${i}`);
        field += text[i++];
      }
    }
    row.push(field);
    if (text[i] === ",") i++;
    else if (text.startsWith("\r\n", i)) (rows.push(row), (row = []), (i += 2));
    else throw new Error(`expected , or CRLF at ${i}`);
  }
  if (row.length > 0) throw new Error("last row lacks its CRLF");
  return rows;
}

/** Runs SQL on every event database, as a writer with access to all of them: tampering by event id needs no shard. */
/**
 * SQL: the row id a row of project `p`'s seq `seq` takes on its path, as the ledger's own inserts give it
 * (src/model/row-keys.ts): its key's for a keyed project, else the `i`th (from 0) above the shard's rows on the
 * seq index. For rows a test writes by hand: SQLite's own next row id would land in whichever keyed project holds
 * the shard's highest row, another file's as likely as its own.
 */
export function handRowId(p: string, seq: string, i = "0"): string {
  return `coalesce(${keyedRowId(p, seq)}, ${OLDER_TOP} + 1 + ${i})`;
}

export async function onEveryShard(sql: string, ...params: unknown[]) {
  await Promise.all([env.EVENTS_0, env.EVENTS_1].map((db) => db.prepare(sql).bind(...params).run()));
}

/**
 * A D1Database that behaves as `db` except for the statements `wrap` chooses
 * to replace: tests observe or interleave with particular queries this way.
 */
export function interceptPrepare(
  db: D1Database,
  wrap: (sql: string, statement: D1PreparedStatement) => D1PreparedStatement,
): D1Database {
  return new Proxy(db, {
    get(target, key) {
      if (key !== "prepare") {
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      }
      return (sql: string) => wrap(sql, target.prepare(sql));
    },
  });
}

/** Polls `what` until it answers something truthy (which it returns), or fails after timeoutMs. */
export async function until<T>(what: () => Promise<T | null | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const got = await what();
    if (got) return got;
    if (Date.now() > end) throw new Error(`still not there after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Moves a project's rows of seqs past `afterSeq` out of the main tables into
 * period `arm` (made with makePeriod, model/periods.ts), written there by the
 * commit's own statements, a commit of `commit` rows at a time: what a writer
 * of periods leaves. The main tables' triggers take their stand-ins and search
 * entries with them. Returns how many rows moved.
 */
export async function moveIntoPeriod(db: D1Database, projectId: string, arm: number, afterSeq: number, commit = 100): Promise<number> {
  const stored = COLUMNS.filter((c) => !(INDEXING_COLUMNS as readonly string[]).includes(c));
  const { results: rows } = await db.prepare(`SELECT ${stored.join(", ")} FROM events WHERE project_id = ? AND seq > ? ORDER BY seq`).bind(projectId, afterSeq).all<EventRow>();
  await db.prepare("DELETE FROM events WHERE project_id = ? AND seq > ?").bind(projectId, afterSeq).run();
  const period = armDb(db, arm);
  for (let i = 0; i < rows.length; i += commit) await db.batch(insertEventsStatements(period, rows.slice(i, i + commit)));
  return rows.length;
}

/** A period number of a test's own, far from any real one (whole weeks since 1970: about 2,950 in 2026). */
export function testArm(): number {
  return 100_000 + Math.floor(Math.random() * 800_000);
}

/** A period long past (weeks since 1970, before 2026's about 2,950), so settled: no row can land in it. Test files that make periods run one after another in a runtime (test/vitest.config.ts). */
export function pastArm(): number {
  return 1000 + Math.floor(Math.random() * 1500);
}
