import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, createProject, ingestMany } from "../helpers";
import { archiveAll } from "../storage/archive-helpers";

const at = (i: number) => new Date(Date.UTC(2026, 2, 1) + i * 60_000).toISOString();
const docs = ["d1", "d2", "d3"];

// Event i targets document d(i % 3 + 1); every fourth also a user; event 7 names d2 twice; event 12 a team third.
const events = Array.from({ length: 24 }, (_, i) => ({
  action: i % 2 === 0 ? "doc.read" : "doc.write",
  actor: { id: `u${i % 2}` },
  targets: [
    { type: "document", id: docs[i % 3] },
    ...(i % 4 === 0 ? [{ type: "user", id: `u${i}` }] : []),
    ...(i === 7 ? [{ type: "document", id: "d2" }] : []),
    ...(i === 12 ? [{ type: "team", id: "t1" }] : []),
  ],
  occurred_at: at(i),
}));
const seqsOf = (rows: Array<{ seq: number }>) => rows.map((r) => r.seq);
const expected = (keep: (i: number) => boolean) => events.map((_, i) => i + 1).filter((seq) => keep(seq - 1)).reverse();

async function walk(key: string, query: string, limit = 5) {
  const seqs: number[] = [];
  let cursor: string | null = null;
  do {
    const page = await call("GET", `/v1/events?${query}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { key });
    expect(page.status, JSON.stringify(page.json)).toBe(200);
    seqs.push(...seqsOf(page.json.data));
    cursor = page.json.nextCursor;
  } while (cursor);
  return seqs;
}

describe("target filters", () => {
  it("list, search and export by target type and id, newest first, each event once, with the other filters", async () => {
    const p = await createProject();
    await ingestMany(p.key, events);
    expect(await walk(p.key, "target_type=document&target_id=d2")).toEqual(expected((i) => i % 3 === 1));
    expect(await walk(p.key, "target_type=user")).toEqual(expected((i) => i % 4 === 0));
    expect(await walk(p.key, "target_type=document&target_id=d1&action=doc.write")).toEqual(expected((i) => i % 3 === 0 && i % 2 === 1));
    expect(await walk(p.key, "target_type=document&target_id=d3&actor_id=u0", 2)).toEqual(expected((i) => i % 3 === 2 && i % 2 === 0));
    expect(await walk(p.key, `target_type=document&target_id=d2&date_from=${at(5)}&date_to=${at(20)}`)).toEqual(expected((i) => i % 3 === 1 && i >= 5 && i <= 20));
    expect(await walk(p.key, "target_type=document&target_id=nothing")).toEqual([]);
    // A second target (its own indexes) and a third (a row of event_targets).
    expect(await walk(p.key, "target_type=user&target_id=u12")).toEqual([13]);
    expect(await walk(p.key, "target_type=team")).toEqual([13]);
    expect(await walk(p.key, "target_type=team&target_id=t1&actor_id=u0")).toEqual([13]);
    const search = await call("GET", "/v1/events/search?q=doc.read&target_type=user", { key: p.key });
    expect(seqsOf(search.json.data)).toEqual(expected((i) => i % 4 === 0));
    const csv = await call("GET", "/v1/exports?format=json&target_type=document&target_id=d1", { key: p.key });
    expect(seqsOf(JSON.parse(csv.text))).toEqual(expected((i) => i % 3 === 0));
  });

  it("list events stored before migrations 0033 and 0035 once, though their first and second targets are in event_targets too", async () => {
    const p = await createProject();
    await ingestMany(p.key, events);
    // Only targets past the second have rows now: event 12's team.
    const rows = async () => (await p.db.prepare("SELECT count(*) AS n FROM event_targets WHERE project_id = ?").bind(p.id).first<{ n: number }>())!.n;
    expect(await rows()).toBe(1);
    // As the trigger wrote them before: a row for the first and second targets too.
    await p.db.prepare(
      "INSERT OR IGNORE INTO event_targets (project_id, type, id, occurred_at, seq, row_id) SELECT e.project_id, t.value ->> 'type', t.value ->> 'id', e.occurred_at, e.seq, e.row_id " +
        "FROM events e, json_each(e.targets) t WHERE e.project_id = ? AND t.key < 2",
    ).bind(p.id).run();
    // The 24 documents, 6 users and the team; event 7's second d2 is the same row as its first (one row per distinct target).
    expect(await rows()).toBe(24 + 6 + 1);
    expect(await walk(p.key, "target_type=document&target_id=d2", 2)).toEqual(expected((i) => i % 3 === 1));
    expect(await walk(p.key, "target_type=document", 4)).toEqual(expected(() => true));
    expect(await walk(p.key, "target_type=user", 3)).toEqual(expected((i) => i % 4 === 0));
    expect(await walk(p.key, "target_type=user&target_id=u12")).toEqual([13]);
    expect(await walk(p.key, "target_type=team")).toEqual([13]);
    expect(await walk(p.key, "target_type=document&target_id=d1&actor_id=u1")).toEqual(expected((i) => i % 3 === 0 && i % 2 === 1));
    // Their rows still go with their events.
    await p.db.prepare("DELETE FROM events WHERE project_id = ?").bind(p.id).run();
    expect(await rows()).toBe(0);
  });

  it("reach archived events in exports, and refuse a target id without its type", async () => {
    const p = await createProject();
    await ingestMany(p.key, events);
    await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(p.id).run();
    await archiveAll(p.id, 10);
    // Archiving deleted the hot rows, and the trigger their target rows with them.
    expect(await p.db.prepare("SELECT count(*) AS n FROM event_targets WHERE project_id = ?").bind(p.id).first()).toEqual({ n: 0 });
    const exported = await call("GET", "/v1/exports?format=json&target_type=document&target_id=d2", { key: p.key });
    expect(seqsOf(JSON.parse(exported.text)).sort((a, b) => b - a)).toEqual(expected((i) => i % 3 === 1));
    const refused = await call("GET", "/v1/events?target_id=d2", { key: p.key });
    expect(refused.status).toBe(400);
    expect(refused.json.error.details.issues[0]).toMatchObject({ path: "target_id", message: "target_id needs target_type" });
  });
});
