import { env } from "cloudflare:workers";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import app from "../../src/app";
import { ledgerOf } from "../../src/chain/ledger";
import { BASE, call, createProject, ingestMany } from "../helpers";
import { archiveAll, segmentsOf } from "../storage/archive-helpers";

const minute = (i: number) => new Date(Date.UTC(2026, 3, 1) + i * 60_000).toISOString();
type Row = { seq: number; occurred_at: string; actor: { id: string } | null };

/** Every page of a list, with the cursor passed back; the rows in the order served. */
async function walk(key: string, query: string, limit: number, from: string | null = null) {
  const rows: Row[] = [];
  let cursor: string | null = from;
  for (let pages = 0; pages < 200; pages++) {
    const page = await call("GET", `/v1/events?${query}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { key });
    expect(page.status, JSON.stringify(page.json)).toBe(200);
    rows.push(...page.json.data);
    cursor = page.json.nextCursor;
    if (cursor === null) return rows;
  }
  throw new Error("the list did not end");
}

/** Whether cursor a stands strictly after (older than) cursor b in list order. */
function olderThan(a: string, b: string): boolean {
  const [ao, as] = a.split("~");
  const [bo, bs] = b.split("~");
  return ao < bo || (ao === bo && Number(as) < Number(bs));
}

const order = (rows: Row[]) => [...rows].sort((a, b) => (a.occurred_at === b.occurred_at ? b.seq - a.seq : a.occurred_at < b.occurred_at ? 1 : -1));

describe("the list spans hot and archived events", () => {
  it("pages through both tiers in one order with one cursor, with filters, backdated events and the archive sealing between pages", async () => {
    const p = await createProject();
    // 40 events a minute apart, then archived in segments of 8; then 12 hot ones, some backdated into the archived span.
    await ingestMany(p.key, Array.from({ length: 40 }, (_, i) => ({ action: "doc.old", actor: { id: `u${i % 3}` }, targets: [{ type: "doc", id: `d${i % 2}` }], occurred_at: minute(i) })));
    await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(p.id).run();
    await archiveAll(p.id, 8);
    await env.DB.prepare("UPDATE projects SET hot_days = NULL WHERE id = ?").bind(p.id).run();
    expect((await segmentsOf(p.db, p.id)).length).toBe(5);
    await ingestMany(p.key, Array.from({ length: 12 }, (_, i) => ({ action: "doc.new", actor: { id: `u${i % 3}` }, occurred_at: minute(i % 2 === 0 ? 100 + i : 3 * i + 1) })));

    const all = await walk(p.key, "x=1", 7);
    expect(all.map((r) => r.seq)).toEqual(order(all).map((r) => r.seq));
    expect(all.map((r) => r.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 52 }, (_, i) => i + 1));
    const u1 = await walk(p.key, "actor_id=u1", 3);
    expect(u1.every((r) => r.actor?.id === "u1")).toBe(true);
    expect(u1.map((r) => r.seq)).toEqual(order(all.filter((r) => r.actor?.id === "u1")).map((r) => r.seq));
    expect((await walk(p.key, "target_type=doc&target_id=d1", 5)).map((r) => r.seq)).toEqual(all.filter((r) => r.seq <= 40 && r.seq % 2 === 0).map((r) => r.seq));
    const window = await walk(p.key, `date_from=${minute(10)}&date_to=${minute(30)}`, 4);
    expect(window.map((r) => r.seq)).toEqual(all.filter((r) => r.occurred_at >= minute(10) && r.occurred_at <= minute(30)).map((r) => r.seq));

    // Search too: the index for hot rows, the same matcher on archived ones, in the same order.
    const searched: Row[] = [];
    for (let cursor: string | null = null, pages = 0; pages < 50; pages++) {
      const page: { json: { data: Row[]; nextCursor: string | null } } = await call("GET", `/v1/events/search?q=doc&actor_id=u2&limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { key: p.key });
      searched.push(...page.json.data);
      if ((cursor = page.json.nextCursor) === null) break;
    }
    expect(searched.map((r) => r.seq)).toEqual(all.filter((r) => r.actor?.id === "u2").map((r) => r.seq));
    expect((await call("GET", "/v1/events/search?q=old", { key: p.key })).json.data.every((r: { action: string }) => r.action === "doc.old")).toBe(true);

    // Two pages in, the archiver seals the hot rows too: the walk goes on with nothing lost or repeated.
    const first = await call("GET", "/v1/events?limit=9", { key: p.key });
    await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(p.id).run();
    await archiveAll(p.id, 8);
    const rest = await walk(p.key, "x=1", 9, first.json.nextCursor);
    expect([...first.json.data, ...rest].map((r: Row) => r.seq)).toEqual(all.map((r) => r.seq));
  });

  it("reads a bounded number of segments a page, and a sparse filter still finds every event", async () => {
    const p = await createProject();
    await ingestMany(p.key, Array.from({ length: 60 }, (_, i) => ({ action: "doc.a", actor: { id: i % 20 === 0 ? "rare" : "common" }, occurred_at: minute(i) })));
    await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(p.id).run();
    await archiveAll(p.id, 2);
    expect((await segmentsOf(p.db, p.id)).length).toBe(30);
    // The segments' summaries rule out the 27 without the actor: one page reads three segments and finds all.
    const whole = await call("GET", "/v1/events?actor_id=rare&limit=50", { key: p.key });
    expect(whole.json.data.map((r: Row) => r.seq)).toEqual([41, 21, 1]);
    expect(whole.json.nextCursor).toBeNull();
    // Without summaries (sealed before them, until the archiver's backfill): ten segments a page, so the
    // 30 segments take several pages, some of them empty but never stuck.
    await p.db.prepare("DELETE FROM archive_summaries WHERE project_id = ?").bind(p.id).run();
    const rare = await walk(p.key, "actor_id=rare", 50);
    expect(rare.map((r) => r.seq)).toEqual([41, 21, 1]);
    const page = await call("GET", "/v1/events?actor_id=rare&limit=50", { key: p.key });
    expect(page.json.data.map((r: Row) => r.seq)).toEqual([41]);
    expect(page.json.nextCursor).toMatch(/~999999999999999$/);
  });
});

describe("archived rows in the list and pending erasures", () => {
  it("shows an archived row scrubbed while its erasure is pending, and a filter on the erased id finds nothing", async () => {
    const p = await createProject();
    await ingestMany(p.key, Array.from({ length: 6 }, (_, i) => ({ action: "doc.a", actor: { id: i < 3 ? "gone" : "kept", email: `x${i}@example.com` }, occurred_at: minute(i) })));
    await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(p.id).run();
    await archiveAll(p.id, 3);
    const subject = [...new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode("id:gone")))].map((b) => b.toString(16).padStart(2, "0")).join("");
    await p.db.prepare("INSERT INTO pending_erasures (project_id, erasure_id, by, subject_sha256, organization, erased_at, through_seq) VALUES (?, 7, 'id', ?, NULL, ?, 6)")
      .bind(p.id, subject, minute(99))
      .run();
    const rows = (await call("GET", "/v1/events?limit=10", { key: p.key })).json.data;
    expect(rows).toHaveLength(6);
    for (const row of rows.filter((r: { seq: number }) => r.seq <= 3)) expect(row).toMatchObject({ actor: null, anonymized_at: minute(99) });
    expect(JSON.stringify(rows)).not.toContain("gone");
    expect((await call("GET", "/v1/events?actor_id=gone", { key: p.key })).json.data).toEqual([]);
    // Search finds the archived rows by what stays (their action), never by the erased id or e-mail.
    expect((await call("GET", "/v1/events/search?q=gone", { key: p.key })).json.data).toEqual([]);
    expect((await call("GET", "/v1/events/search?q=x1", { key: p.key })).json.data).toEqual([]);
    expect((await call("GET", "/v1/events/search?q=x4", { key: p.key })).json.data.map((r: Row) => r.seq)).toEqual([5]);
  });
});

describe("a cursor from before retention retired the segments it points into", () => {
  it("goes on below its position: the purged events are gone, nothing else is lost or repeated, and no 500", async () => {
    const p = await createProject();
    // 16 doc.old events (a one-day rule expires them) below 24 doc.new ones, in segments of 8.
    await ingestMany(p.key, Array.from({ length: 40 }, (_, i) => ({ action: i < 16 ? "doc.old" : "doc.new", actor: { id: `u${i % 3}` }, occurred_at: minute(i) })));
    await archiveAll(p.id, 8);
    expect((await segmentsOf(p.db, p.id)).length).toBe(5);
    const first = await call("GET", "/v1/events?limit=7", { key: p.key });
    expect(first.json.data.map((r: Row) => r.seq)).toEqual([40, 39, 38, 37, 36, 35, 34]);
    // A cursor standing inside what is about to be retired: the 12th event's position.
    const inside = await call("GET", "/v1/events?limit=29", { key: p.key });
    expect(inside.json.data.at(-1).seq).toBe(12);

    expect((await call("PUT", "/v1/retention", { key: p.key, body: { rules: [{ pattern: "doc.old", days: 1 }] } })).status).toBe(200);
    const ledger = ledgerOf(env, p.id);
    for (let i = 0; i < 20 && !(await ledger.purgeNow(new Date().toISOString())).done; i++);
    // The two doc.old segments were retired whole: nothing came back into D1.
    expect((await segmentsOf(p.db, p.id)).map((s) => s.first_seq)).toEqual([17, 25, 33]);
    expect((await p.db.prepare("SELECT count(*) AS n FROM events WHERE project_id = ? AND seq <= 16").bind(p.id).first<{ n: number }>())!.n).toBe(0);

    const rest = await walk(p.key, "x=1", 7, first.json.nextCursor);
    // The retention change is recorded in the chain as witness.retention.changed: newer than the cursor, so not on these pages.
    expect(rest.map((r) => r.seq)).toEqual(Array.from({ length: 17 }, (_, i) => 33 - i));
    expect(await walk(p.key, "x=1", 5, inside.json.nextCursor)).toEqual([]);
    const filtered = await walk(p.key, "actor_id=u1", 3, first.json.nextCursor);
    expect(filtered.map((r) => r.seq)).toEqual(rest.filter((r) => r.actor?.id === "u1").map((r) => r.seq));
  });
});

describe("segments that each span most of the project's time", () => {
  it("pages never move backwards or stand still: a page reads more segments instead, and every event comes once, in order", async () => {
    const p = await createProject();
    // A backfill out of order: each segment of 3 holds events from across the hour, so every cursor falls inside most segments.
    await ingestMany(p.key, Array.from({ length: 90 }, (_, i) => ({ action: "doc.a", actor: { id: i % 9 === 4 ? "rare" : `u${i % 4}` }, occurred_at: minute((i * 37) % 90) })));
    await archiveAll(p.id, 3);
    expect((await segmentsOf(p.db, p.id)).length).toBe(30);
    for (const [query, limit] of [["actor_id=rare", 2], ["x=1", 7], ["actor_id=u1", 4]] as const) {
      const rows: Row[] = [];
      let cursor: string | null = null;
      for (let pages = 0; ; pages++) {
        expect(pages).toBeLessThan(100);
        const page = await call("GET", `/v1/events?${query}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { key: p.key });
        expect(page.status).toBe(200);
        rows.push(...page.json.data);
        const next: string | null = page.json.nextCursor;
        // Strictly older than the cursor sent: a cursor that moved back would serve rows again, one that stood still would loop.
        if (next !== null && cursor !== null) expect(olderThan(next, cursor), `${next} after ${cursor}`).toBe(true);
        if ((cursor = next) === null) break;
      }
      const all = (await walk(p.key, "x=1", 90)).filter((r) => query === "x=1" || r.actor?.id === query.split("=")[1]);
      expect(rows.map((r) => r.seq)).toEqual(order(all).map((r) => r.seq));
      expect(new Set(rows.map((r) => r.seq)).size).toBe(rows.length);
    }
  });
});

describe("a page that would read more segments than one request may", () => {
  /** GET through the app with HISTORY_SEGMENT_READS set as an operator would in wrangler.toml. */
  async function getWith(reads: string, key: string, path: string) {
    const ctx = createExecutionContext();
    const res = await app.fetch(new Request(`${BASE}${path}`, { headers: { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "10.9.8.7" } }), { ...env, HISTORY_SEGMENT_READS: reads }, ctx);
    await waitOnExecutionContext(ctx);
    return { status: res.status, json: (await res.json()) as any };
  }

  it("answers 422 QUERY_TOO_BROAD saying how to narrow it, instead of passing the platform's limits; a filter the summaries narrow still pages", async () => {
    const p = await createProject();
    // 30 segments that each span the whole hour: below any cursor inside it, every one may hold the next row.
    await ingestMany(p.key, Array.from({ length: 90 }, (_, i) => ({ action: "doc.a", actor: { id: i % 9 === 4 ? "rare" : `u${i % 4}` }, occurred_at: minute((i * 37) % 90) })));
    await archiveAll(p.id, 3);
    const cursor = encodeURIComponent(`${minute(45)}~999999`);
    const broad = await getWith("11", p.key, `/v1/events?limit=5&cursor=${cursor}`);
    expect(broad.status).toBe(422);
    expect(broad.json.error).toMatchObject({ code: "QUERY_TOO_BROAD", details: { most_segments: 11 } });
    expect(broad.json.error.message).toMatch(/more than 11 archived segments.*filter.*POST \/v1\/jobs/);
    // The same page within the default allowance is answered.
    expect((await getWith("4000", p.key, `/v1/events?limit=5&cursor=${cursor}`)).status).toBe(200);
    // 10 events of 90 are the rare actor's, in at most 10 segments: their page fits under 11 reads.
    const rare = await getWith("11", p.key, `/v1/events?actor_id=rare&limit=5&cursor=${cursor}`);
    expect(rare.status).toBe(200);
    expect(rare.json.data.length).toBeGreaterThan(0);
    expect(rare.json.data.every((e: Row) => e.actor?.id === "rare" && e.occurred_at < minute(45))).toBe(true);
  });
});

describe("search of archived rows", () => {
  it("finds terms however the stored line spells them: accents, other scripts, quotes and line breaks in the text", async () => {
    const p = await createProject();
    const names = ["Zoë Ünal", 'O"Brien\nSmith', "Ольга Петрова", "plain ascii"];
    await ingestMany(p.key, names.map((name, i) => ({ action: "doc.read", actor: { id: `n${i}`, name }, occurred_at: minute(i) })));
    await archiveAll(p.id, 2);
    const found = async (q: string) => (await call("GET", `/v1/events/search?q=${encodeURIComponent(q)}`, { key: p.key })).json.data.map((r: { actor: { id: string } }) => r.actor.id);
    expect(await found("zoe")).toEqual(["n0"]);
    expect(await found("UNAL")).toEqual(["n0"]);
    expect(await found("brien smith")).toEqual(["n1"]);
    expect(await found("петр")).toEqual(["n2"]);
    expect(await found("ascii pla")).toEqual(["n3"]);
    expect(await found("asciix")).toEqual([]);
  });
});
