import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { insertEventsStatements } from "../../src/chain/event-insert";
import type { EventRow } from "../../src/db/schema";
import { eventsByIdStatement } from "../../src/model/event-lookup";
import { idTag, mintEventId } from "../../src/model/event-id";
import { call, createProject } from "../helpers";

/**
 * Issue 38 (storage v2): a hot event is found by id through its commit's span
 * (migration 0029), with no id index entry of its own; rows written any other
 * way keep the (now partial) id index. Every reader asks both ways at once.
 */
const batch = (n: number) => ({ events: Array.from({ length: n }, (_, i) => ({ action: "doc.viewed", actor: { id: `u_${i}` } })) });

/** Same millisecond and project tag, other random bits: an id nobody was given. */
const madeUp = (id: string) => `${id.slice(0, 24)}${id.slice(24, 28).split("").reverse().join("")}${id.slice(28)}`;

async function ingested(n: number) {
  const project = await createProject();
  const res = await call("POST", "/v1/events/batch", { key: project.key, body: batch(n) });
  expect(res.status).toBe(201);
  return { project, ids: (res.json.data as Array<{ id: string }>).map((e) => e.id) };
}

const spansOf = async (db: D1Database, projectId: string) =>
  (await db.prepare("SELECT first_seq, last_seq FROM commit_spans WHERE project_id = ? ORDER BY first_seq").bind(projectId).all()).results;

describe("hot events by id, through their commit's span", () => {
  it("finds each event of a commit for its project and for a public receipt, and nothing for another project or a made-up id", async () => {
    const { project, ids } = await ingested(3);
    expect(await spansOf(project.db, project.id)).toEqual([{ first_seq: 1, last_seq: 3 }]);
    for (const id of ids) {
      expect((await call("GET", `/v1/events/${id}`, { key: project.key })).json.data.id).toBe(id);
      expect((await call("GET", `/v1/receipts/${id}`)).json.data.event_id).toBe(id);
    }
    const other = await createProject();
    expect((await call("GET", `/v1/events/${ids[0]}`, { key: other.key })).status).toBe(404);
    expect(madeUp(ids[1])).not.toBe(ids[1]);
    expect((await call("GET", `/v1/events/${madeUp(ids[1])}`, { key: project.key })).status).toBe(404);
    expect((await call("GET", `/v1/receipts/${madeUp(ids[1])}`)).status).toBe(404);
  });

  it("finds rows that have no span (written before migration 0029, or by older code) through the id index", async () => {
    const { project, ids } = await ingested(2);
    await project.db.batch([
      project.db.prepare("UPDATE events SET id_indexed = 1 WHERE project_id = ?").bind(project.id),
      project.db.prepare("DELETE FROM commit_spans WHERE project_id = ?").bind(project.id),
    ]);
    for (const id of ids) expect((await call("GET", `/v1/events/${id}`, { key: project.key })).json.data.id).toBe(id);
    expect((await call("GET", `/v1/receipts/${ids[1]}`)).status).toBe(200);
  });

  it("keeps a span while any event of its commit is left, whatever order they go in (retention purges by rule)", async () => {
    const { project, ids } = await ingested(3);
    await project.db.prepare("DELETE FROM events WHERE project_id = ? AND seq = 3").bind(project.id).run();
    expect(await spansOf(project.db, project.id)).toEqual([{ first_seq: 1, last_seq: 3 }]);
    expect((await call("GET", `/v1/events/${ids[0]}`, { key: project.key })).status).toBe(200);
    expect((await call("GET", `/v1/events/${ids[1]}`, { key: project.key })).status).toBe(200);
    await project.db.prepare("DELETE FROM events WHERE project_id = ? AND seq = 1").bind(project.id).run();
    expect(await spansOf(project.db, project.id)).toHaveLength(1);
    await project.db.prepare("DELETE FROM events WHERE project_id = ? AND seq = 2").bind(project.id).run();
    expect(await spansOf(project.db, project.id)).toEqual([]);
  });

  it("gives each commit its own receive millisecond, so no two commits' ids can meet", async () => {
    const project = await createProject();
    const sent = await Promise.all(Array.from({ length: 40 }, (_, i) => call("POST", "/v1/events", { key: project.key, body: { action: "doc.viewed", metadata: { i } } })));
    expect(sent.every((r) => r.status === 201)).toBe(true);
    const spans = (await project.db.prepare("SELECT received_at FROM commit_spans WHERE project_id = ? ORDER BY first_seq").bind(project.id).all<{ received_at: string }>()).results;
    expect(new Set(spans.map((s) => s.received_at)).size).toBe(spans.length);
    // In chain order, never stepping back.
    expect(spans.map((s) => s.received_at)).toEqual([...spans.map((s) => s.received_at)].sort());
  });

  it("reads every span of a millisecond: two commits received at the same instant are both found", async () => {
    const projectId = `p-${crypto.randomUUID()}`;
    const receivedAt = new Date().toISOString();
    const tag = await idTag(projectId);
    const row = (seq: number): EventRow => ({
      row_id: null as unknown as number, id: mintEventId(receivedAt, tag), project_id: projectId, seq, action: "doc.viewed",
      organization: null, actor_id: null, actor_type: null, actor_name: null, actor_email: null, targets: "[]", metadata: "{}",
      occurred_at: receivedAt, received_at: receivedAt, ip_address: null, user_agent: null, pii_salt: null, pii_commitment: "0".repeat(64),
      hash: "0".repeat(64), prev_hash: null, signature: null, anonymized_at: null, changes: null, schema_version: null, schema_valid: null,
    });
    const first = [row(1), row(2)];
    const second = [row(3), row(4)];
    await env.DB.batch(insertEventsStatements(env.DB, first));
    await env.DB.batch(insertEventsStatements(env.DB, second));
    expect(await spansOf(env.DB, projectId)).toEqual([{ first_seq: 1, last_seq: 2 }, { first_seq: 3, last_seq: 4 }]);
    const ids = [...first, ...second].map((r) => r.id);
    const { sql, params } = eventsByIdStatement("e.id, e.seq", ids, projectId);
    const { results } = await env.DB.prepare(sql).bind(...params).all<{ id: string; seq: number }>();
    expect(results.map((r) => r.seq).sort()).toEqual([1, 2, 3, 4]);
    const one = eventsByIdStatement("e.seq", [ids[2]], null);
    expect((await env.DB.prepare(one.sql).bind(...one.params).all()).results).toEqual([{ seq: 3 }]);
  });
});

describe("a lone live event, found at its id's instant in the time index (migration 0037)", () => {
  it("is found for its project and for a public receipt, not for another project, and a made-up id of its instant is not", async () => {
    const project = await createProject();
    const sent = await call("POST", "/v1/events", { key: project.key, body: { action: "doc.viewed", actor: { id: "u_1" } } });
    expect(sent.status).toBe(201);
    const { id } = sent.json.data;
    const row = await project.db.prepare("SELECT id_indexed, occurred_at = received_at AS live FROM events WHERE id = ?").bind(id).first();
    expect(row).toEqual({ id_indexed: 2, live: 1 });
    expect(await spansOf(project.db, project.id)).toEqual([]);
    expect((await call("GET", `/v1/events/${id}`, { key: project.key })).json.data).toEqual(sent.json.data);
    expect((await call("GET", `/v1/receipts/${id}`)).json.data.event_id).toBe(id);
    const other = await createProject();
    expect((await call("GET", `/v1/events/${id}`, { key: other.key })).status).toBe(404);
    expect((await call("GET", `/v1/events/${madeUp(id)}`, { key: project.key })).status).toBe(404);
    expect((await call("GET", `/v1/receipts/${madeUp(id)}`)).status).toBe(404);
  });

  it("is told apart from a backfilled event whose occurred_at is the same instant", async () => {
    const project = await createProject();
    const live = (await call("POST", "/v1/events", { key: project.key, body: { action: "doc.viewed" } })).json.data;
    const backfilled = await call("POST", "/v1/events", { key: project.key, body: { action: "doc.shared", occurred_at: live.occurred_at } });
    expect(backfilled.status).toBe(201);
    expect(backfilled.json.data.occurred_at).toBe(live.occurred_at);
    for (const e of [live, backfilled.json.data]) {
      expect((await call("GET", `/v1/events/${e.id}`, { key: project.key })).json.data).toEqual(e);
      expect((await call("GET", `/v1/receipts/${e.id}`)).json.data.event_id).toBe(e.id);
    }
  });

  it("is answered again to a retry with its Idempotency-Key", async () => {
    const project = await createProject();
    const headers = { "Idempotency-Key": "lone-live-once" };
    const first = await call("POST", "/v1/events", { key: project.key, body: { action: "doc.viewed" }, headers });
    const again = await call("POST", "/v1/events", { key: project.key, body: { action: "doc.viewed" }, headers });
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
    expect(again.json.data).toEqual(first.json.data);
    const stored = await project.db.prepare("SELECT count(*) AS n FROM events WHERE project_id = ?").bind(project.id).first<{ n: number }>();
    expect(stored!.n).toBe(1);
  });
});
