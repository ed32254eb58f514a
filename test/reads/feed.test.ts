import { describe, expect, it } from "vitest";
import { call, createProject, ingest, ingestMany } from "../helpers";
import { archiveAll } from "../storage/archive-helpers";
import { ago, batch, plan, purgeSteps } from "../storage/retention-helpers";
import { env } from "cloudflare:workers";

interface Page {
  data: Array<{ seq: number; action: string; occurred_at: string }>;
  gaps: Array<{ first_seq: number; last_seq: number; kind: string }>;
  nextCursor: string;
  at_head: boolean;
}

async function feed(key: string, query = ""): Promise<Page & { link: string | null }> {
  const res = await call("GET", `/v1/events/feed${query ? `?${query}` : ""}`, { key });
  expect(res.status, res.text).toBe(200);
  return { ...res.json, link: res.headers.get("Link") };
}

/** A collector: pages from `cursor` until the head, as a SIEM poller would. */
async function drain(key: string, cursor: string | null, query = "limit=3") {
  const seqs: number[] = [];
  const gaps: Page["gaps"] = [];
  for (let i = 0; i < 200; i++) {
    const page = await feed(key, `${query}${cursor ? `&after=${encodeURIComponent(cursor)}` : ""}`);
    seqs.push(...page.data.map((e) => e.seq));
    gaps.push(...page.gaps);
    cursor = page.nextCursor;
    if (page.at_head) return { seqs, gaps, cursor };
  }
  throw new Error("the feed never reached the head");
}

// Backdated out of order: the list (newest occurred_at first) would put them anywhere; the feed keeps chain order.
const backdated = (n: number, action = "doc.read") =>
  Array.from({ length: n }, (_, i) => ({ action, occurred_at: new Date(Date.UTC(2026, 0, 1) + ((i * 7919) % 97) * 86_400_000).toISOString() }));

describe("GET /v1/events/feed", () => {
  it("gives every event once, in chain order whatever its occurred_at, and resumes from a saved cursor with only what came after", async () => {
    const p = await createProject();
    await ingestMany(p.key, backdated(10));
    const first = await drain(p.key, null);
    expect(first.seqs).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    expect(first.gaps).toEqual([]);
    // At the head the cursor is not null and polling with it answers nothing new.
    const idle = await feed(p.key, `after=${encodeURIComponent(first.cursor)}`);
    expect(idle).toMatchObject({ data: [], at_head: true, nextCursor: first.cursor });
    expect(idle.link).toMatch(/^<\/v1\/events\/feed\?after=wf1\.10\.[^>]+>; rel="next"$/);
    // Events backdated before everything come next, after the cursor, not lost in the past.
    await ingestMany(p.key, [{ action: "late", occurred_at: "2020-01-01T00:00:00Z" }, { action: "late", occurred_at: "2021-01-01T00:00:00Z" }]);
    const next = await drain(p.key, first.cursor);
    expect(next.seqs).toEqual([11, 12]);
    // The Link header is the next request, filters and all.
    const linked = await feed(p.key, "limit=4&action=doc.read");
    expect(linked.link).toContain("limit=4");
    expect(linked.link).toContain("action=doc.read");
  });

  it("applies the list filters, moving the cursor past what does not match", async () => {
    const p = await createProject();
    await ingestMany(p.key, [...backdated(5, "a.one"), ...backdated(5, "b.two"), ...backdated(3, "a.one")]);
    const only = await drain(p.key, null, "limit=2&action=a.one");
    expect(only.seqs).toEqual([1, 2, 3, 4, 5, 11, 12, 13]);
    const none = await feed(p.key, "action=never.seen");
    expect(none).toMatchObject({ data: [], at_head: true });
    expect(none.nextCursor).toMatch(/^wf1\.13\./);
  });

  it("starts at the first event committed at or after since", async () => {
    const p = await createProject();
    await ingestMany(p.key, backdated(4));
    await new Promise((r) => setTimeout(r, 20));
    const since = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 20));
    await ingestMany(p.key, backdated(3, "after.since"));
    const page = await feed(p.key, `since=${since}`);
    expect(page.data.map((e) => e.seq)).toEqual([5, 6, 7]);
    expect((await feed(p.key, `since=${new Date(Date.now() + 60_000).toISOString()}`)).data).toEqual([]);
    expect((await feed(p.key, "since=2000-01-01T00:00:00Z")).data.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it("long-polls with wait until the next commit", async () => {
    const p = await createProject();
    await ingest(p.key, { action: "first" });
    const head = await feed(p.key);
    const started = Date.now();
    const waiting = call("GET", `/v1/events/feed?wait=10&after=${encodeURIComponent(head.nextCursor)}`, { key: p.key });
    await new Promise((r) => setTimeout(r, 300));
    await ingest(p.key, { action: "second" });
    const res = await waiting;
    expect(res.status).toBe(200);
    expect(res.json.data.map((e: any) => e.action)).toEqual(["second"]);
    expect(Date.now() - started).toBeLessThan(8_000);
    // Nothing comes: it answers empty once the wait is over.
    const quiet = Date.now();
    const empty = await feed(p.key, `wait=1&after=${encodeURIComponent(res.json.nextCursor)}`);
    expect(empty.data).toEqual([]);
    expect(Date.now() - quiet).toBeGreaterThanOrEqual(900);
  });

  it("reads archived history, and names retention gaps and missing events instead of skipping them silently", async () => {
    const p = await createProject();
    await ingestMany(p.key, [...batch(4, "old.thing", ago(40)), ...batch(4, "keep.thing", ago(1))]);
    await plan(p.key, [{ pattern: "old.*", days: 30 }]);
    await purgeSteps(p.id);
    await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(p.id).run();
    // A database writer deletes one event: the feed says so.
    const retentionSeqs = (await feed(p.key)).data.map((e) => e.seq);
    await p.db.prepare("DELETE FROM events WHERE project_id = ? AND seq = ?").bind(p.id, retentionSeqs[1]).run();
    await archiveAll(p.id, 3);
    const all = await drain(p.key, null, "limit=2");
    expect(all.seqs).toEqual(retentionSeqs.filter((s) => s !== retentionSeqs[1]));
    expect(all.gaps).toContainEqual({ first_seq: 1, last_seq: 4, kind: "retention" });
    expect(all.gaps).toContainEqual({ first_seq: retentionSeqs[1], last_seq: retentionSeqs[1], kind: "missing" });
  });

  it("refuses a cursor of another project, an altered or foreign one, and out-of-range parameters", async () => {
    const p = await createProject();
    const q = await createProject();
    await ingest(p.key, { action: "x" });
    const theirs = (await feed(q.key)).nextCursor;
    const mine = (await feed(p.key)).nextCursor;
    const refused = async (query: string, path: string) => {
      const res = await call("GET", `/v1/events/feed?${query}`, { key: p.key });
      expect(res.status, res.text).toBe(400);
      expect(res.json.error.details.issues[0].path).toBe(path);
    };
    await refused(`after=${encodeURIComponent(theirs)}`, "after");
    await refused(`after=${encodeURIComponent(mine.replace(/^wf1\.1\./, "wf1.0."))}`, "after");
    await refused("after=2026-05-05T05:05:05.000Z~3", "after");
    await refused("wait=26", "wait");
    await refused("limit=1001", "limit");
    await refused(`after=${encodeURIComponent(mine)}&since=2026-01-01T00:00:00Z`, "since");
    expect((await call("GET", "/v1/events/feed", { key: (await createProject()).key, headers: {} })).status).toBe(200);
  });
});
