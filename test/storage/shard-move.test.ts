import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import { KEY_SPAN } from "../../src/model/row-keys";
import type { MoveHooks, MoveProgress } from "../../src/storage/shard-move";
import { MOVE_BATCH } from "../../src/storage/shard-copy";
import { call, createProject, ingest, ingestMany } from "../helpers";
import { eraseApplied } from "../chain/erasure-helpers";
import { searchGroupsOf } from "./search-groups";

const FAST: MoveHooks = { drainSeconds: 0 };
const events = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({
    action: `doc.${tag}`,
    actor: { id: `u_${i % 7}`, name: `User ${i % 7}` },
    targets: [{ type: i % 5 === 0 ? "user" : "document", id: `t_${i % 3}` }],
    metadata: { i },
  }));

async function requestMove(projectId: string, shard: number) {
  await env.DB.prepare("UPDATE projects SET move_to = ? WHERE id = ?").bind(shard, projectId).run();
}

/** Steps the move until done; `between` runs after every step (concurrent work, crashes). */
async function runMove(projectId: string, shard: number, hooks: MoveHooks = FAST, between?: (p: MoveProgress) => Promise<void>) {
  const ledger = ledgerOf(env, projectId);
  const seen: string[] = [];
  for (let i = 0; i < 200; i++) {
    const progress = await ledger.moveShard(shard, hooks);
    seen.push(progress.status);
    if (progress.status === "done") return seen;
    if (!["clearing", "copying", "draining", "deleting"].includes(progress.status)) throw new Error(`move: ${JSON.stringify(progress)}`);
    await between?.(progress);
  }
  throw new Error("move did not finish");
}

async function countOn(db: D1Database, projectId: string) {
  const row = await db
    .prepare(
      "SELECT (SELECT count(*) FROM events WHERE project_id = ?1) AS events, (SELECT count(DISTINCT seq) FROM events WHERE project_id = ?1) AS seqs, " +
        "(SELECT count(*) FROM idempotency_keys WHERE project_id = ?1) AS keys",
    )
    .bind(projectId)
    .first<{ events: number; seqs: number; keys: number }>();
  return row!;
}

async function shardOf(projectId: string) {
  return (await env.DB.prepare("SELECT shard, move_to FROM projects WHERE id = ?").bind(projectId).first<{ shard: number; move_to: number | null }>())!;
}

/** Verify passes over `count` events (erased ones are counted apart, as anonymized). */
async function expectIntact(key: string, count: number) {
  const verify = (await call("GET", "/v1/events/verify", { key })).json.data;
  expect(verify.ok).toBe(true);
  expect(verify.verified + verify.anonymized).toBe(count);
}

describe("moving a project between shards", () => {
  it("moves under concurrent ingest: no event lost, chain intact, source emptied", async () => {
    const p = await createProject(undefined, { shard: 0 });
    await ingestMany(p.key, events(1100, "before"));
    await ingest(p.key, { action: "keyed.one" }, { headers: { "Idempotency-Key": "k-before" } });
    await requestMove(p.id, 1);
    // Appends run alongside the move: each waits for at most one locked step, and lands on
    // whichever shard the ledger writes to at that moment.
    let during = 0;
    let moving = true;
    const writer = (async () => {
      while (moving) {
        const res = await call("POST", "/v1/events/batch", { key: p.key, body: { events: events(20, "during") } });
        expect(res.status).toBe(201);
        during += res.json.data.length;
      }
    })();
    const seen = await runMove(p.id, 1, FAST, async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }).finally(() => (moving = false));
    await writer;
    expect(seen).toContain("copying");
    expect(seen).toContain("draining");
    expect(during).toBeGreaterThan(0);
    const total = 1101 + during;
    expect(await shardOf(p.id)).toEqual({ shard: 1, move_to: null });
    expect(await countOn(env.EVENTS_1, p.id)).toEqual({ events: total, seqs: total, keys: 1 });
    expect(await countOn(env.EVENTS_0, p.id)).toEqual({ events: 0, seqs: 0, keys: 0 });
    await expectIntact(p.key, total);
    // After the move: ingest, idempotent replay, list and search all use the new shard.
    expect((await ingest(p.key, { action: "doc.after" })).status).toBe(201);
    const replay = await ingest(p.key, { action: "keyed.one" }, { headers: { "Idempotency-Key": "k-before" } });
    expect(replay.headers.get("Idempotent-Replayed")).toBe("true");
    const search = await call("GET", "/v1/events?q=during&limit=5", { key: p.key });
    expect(search.status).toBe(200);
    expect(search.json.data.length).toBe(5);
    // The copy indexed the rows as commits do, an entry per group of 16, and search finds exactly the events holding its terms.
    const groups = await searchGroupsOf(env.EVENTS_1, p.id);
    // Every group the copy wrote has its entry; the group the commits after the move started may still be open.
    expect(groups).toMatchObject({ events: total + 1, worded: total + 1, entries: groups.groups - groups.open });
    // A row alone in its commit or copy batch keeps its id index entry instead of a span (migration 0036): the event
    // after the move, and at most one at either edge of a copy batch that ends inside a commit.
    expect(groups.unspanned).toBeGreaterThanOrEqual(1);
    expect(groups.unspanned).toBeLessThanOrEqual(1 + 2 * Math.ceil(total / MOVE_BATCH));
    expect(groups.open).toBeLessThanOrEqual(1);
    expect(groups.groups).toBeLessThan((total + 1) / 10);
    const found: number[] = [];
    const moved: Array<{ id: string }> = [];
    for (let cursor = ""; ; ) {
      const page = await call("GET", `/v1/events/search?q=before&actor_id=u_3&limit=100${cursor}`, { key: p.key });
      found.push(...page.json.data.map((e: { metadata: { i: number } }) => e.metadata.i));
      moved.push(...page.json.data);
      if (!page.json.nextCursor) break;
      cursor = `&cursor=${encodeURIComponent(page.json.nextCursor)}`;
    }
    expect(found.sort((a, b) => a - b)).toEqual(Array.from({ length: 1100 }, (_, i) => i).filter((i) => i % 7 === 3));
    // Found by id through the spans the copy wrote (no row took an id index entry): gets and public receipts.
    for (const e of [moved[0], moved[70], moved[moved.length - 1]]) {
      expect((await call("GET", `/v1/events/${e.id}`, { key: p.key })).json.data).toEqual(e);
      expect((await call("GET", `/v1/receipts/${e.id}`)).status).toBe(200);
    }
    // The copy wrote the target type sets as commits do (migration 0039), and the source's went with its rows: a list by
    // type finds every event of it. A batch's i restarts at 0, so a fifth of every batch's events target a user.
    const setsOn = async (db: D1Database) => (await db.prepare("SELECT count(*) AS n FROM target_type_sets WHERE project_id = ?").bind(p.id).first<{ n: number }>())!.n;
    expect(await setsOn(env.EVENTS_1)).toBeGreaterThan(0);
    expect(await setsOn(env.EVENTS_0)).toBe(0);
    const users = await call("GET", "/v1/exports?format=json&target_type=user", { key: p.key });
    const expectedUsers = 220 + (during / 20) * 4;
    expect((JSON.parse(users.text) as unknown[]).length).toBe(expectedUsers);
    let listed = 0;
    for (let cursor = ""; ; ) {
      const page = await call("GET", `/v1/events?target_type=user&limit=50${cursor}`, { key: p.key });
      listed += page.json.data.length;
      if (!page.json.nextCursor) break;
      cursor = `&cursor=${encodeURIComponent(page.json.nextCursor)}`;
    }
    expect(listed).toBe(expectedUsers);
    // Commits' live rows of one action were in its sets (migration 0041); a copy marks none, so the moved rows take
    // action index entries, and the source's sets went with its rows. A list by action finds every event either way.
    const actionSetsOn = async (db: D1Database) => (await db.prepare("SELECT count(*) AS n FROM action_sets WHERE project_id = ?").bind(p.id).first<{ n: number }>())!.n;
    expect(await actionSetsOn(env.EVENTS_0)).toBe(0);
    for (const [query, expected] of [["action=doc.before", 1100], ["actions=doc.before,doc.during,keyed.one", 1101 + during]] as const) {
      let byAction = 0;
      for (let cursor = ""; ; ) {
        const page = await call("GET", `/v1/events?${query}&limit=200${cursor}`, { key: p.key });
        byAction += page.json.data.length;
        if (!page.json.nextCursor) break;
        cursor = `&cursor=${encodeURIComponent(page.json.nextCursor)}`;
      }
      expect(byAction, query).toBe(expected);
    }
    await expectIntact(p.key, total + 1);
  });

  it("brings a project made before keyed row ids to them: every row keyed on the target, every read and verify as before", async () => {
    const p = await createProject(undefined, { shard: 0, keyed: false });
    await ingestMany(p.key, events(40, "older"));
    const before = await Promise.all(["", "q=older"].map((q) => call("GET", `/v1/events${q ? "/search" : ""}?limit=100&${q}`, { key: p.key })));
    await requestMove(p.id, 1);
    await runMove(p.id, 1);
    // Every row at its key's row id (model/row-keys.ts), and none left on the seq index's side.
    const rows = await env.EVENTS_1.prepare("SELECT count(*) AS n, sum(row_id >= ?2) AS keyed FROM events WHERE project_id = ?1").bind(p.id, KEY_SPAN).first<{ n: number; keyed: number }>();
    expect(rows).toEqual({ n: 40, keyed: 40 });
    const after = await Promise.all(["", "q=older"].map((q) => call("GET", `/v1/events${q ? "/search" : ""}?limit=100&${q}`, { key: p.key })));
    for (const [i, res] of after.entries()) expect(res.json.data).toEqual(before[i].json.data);
    await expectIntact(p.key, 40);
  });

  it("resumes after a crash at each step, with no duplicates", async () => {
    const p = await createProject(undefined, { shard: 1 });
    await ingestMany(p.key, events(700, "crash"));
    await requestMove(p.id, 0);
    const ledger = ledgerOf(env, p.id);
    const crashes: MoveHooks["crashAt"][] = ["copy", "copy", "switch", "delete"];
    let crashed = 0;
    for (let i = 0; i < 200 && crashes.length > 0; i++) {
      const progress = await ledger.moveShard(0, { drainSeconds: 0, crashAt: crashes[0] }).catch((e: Error) => {
        expect(e.message).toContain("injected crash");
        crashes.shift();
        crashed++;
        return null;
      });
      if (progress?.status === "done") break;
      // Ingest keeps working between the crashes, and is never lost.
      if (crashed === 2 && progress === null) await ingest(p.key, { action: "doc.between" });
    }
    expect(crashed).toBe(4);
    await runMove(p.id, 0);
    expect(await shardOf(p.id)).toEqual({ shard: 0, move_to: null });
    expect(await countOn(env.EVENTS_0, p.id)).toMatchObject({ events: 701, seqs: 701 });
    expect(await countOn(env.EVENTS_1, p.id)).toMatchObject({ events: 0 });
    await expectIntact(p.key, 701);
  });

  it("keeps projects on other shards apart, and a scrubbed row is copied scrubbed", async () => {
    const mover = await createProject(undefined, { shard: 0 });
    const stay = await createProject(undefined, { shard: 1 });
    await ingestMany(mover.key, events(600, "mover"));
    await ingestMany(stay.key, events(15, "stay"));
    await requestMove(mover.id, 1);
    const ledger = ledgerOf(env, mover.id);
    let progress: MoveProgress | null = null;
    for (let i = 0; i < 5; i++) progress = await ledger.moveShard(1, FAST); // clearing, gap records, keys, archived ids, events 1-500
    expect(progress).toMatchObject({ status: "copying", copiedThrough: 500 });
    // An erasure during the copy: the copy starts over, so the target never keeps the actor's name.
    expect((await eraseApplied(mover.key, "/v1/actors/u_1")).status).toBe(202);
    await runMove(mover.id, 1);
    const names = await env.EVENTS_1.prepare("SELECT count(*) AS n FROM events WHERE project_id = ? AND actor_name = 'User 1'").bind(mover.id).first<{ n: number }>();
    expect(names!.n).toBe(0);
    // Nor in its search words: a scrubbed row keeps only its action's (the copy makes them from the scrubbed fields).
    const words = await env.EVENTS_1.prepare(
      "SELECT count(*) AS n, sum(search_words = 'doc mover') AS kept FROM events WHERE project_id = ? AND anonymized_at IS NOT NULL",
    ).bind(mover.id).first<{ n: number; kept: number }>();
    expect(words).toEqual({ n: 86, kept: 86 });
    expect((await call("GET", "/v1/events/verify", { key: mover.key })).json.data.anonymized).toBe(86); // i % 7 === 1 for i < 600
    expect(await countOn(env.EVENTS_1, stay.id)).toMatchObject({ events: 15 });
    const list = await call("GET", "/v1/events?limit=100", { key: mover.key });
    expect(list.json.data.length).toBe(100);
    // The erasure's own record (witness.actor.erased) is the newest event.
    expect(list.json.data.every((e: { action: string }) => e.action === "doc.mover" || e.action === "witness.actor.erased")).toBe(true);
    const other = await call("GET", "/v1/events?limit=100", { key: stay.key });
    expect(other.json.data.length).toBe(15);
    await expectIntact(mover.key, 601);
    await expectIntact(stay.key, 15);
  });

  it("refuses moves no operator requested, unknown shards and a second move meanwhile", async () => {
    const p = await createProject(undefined, { shard: 0 });
    await ingestMany(p.key, events(3, "refused"));
    const unrequested = await call("POST", "/v1/project/move", { key: p.key, body: { shard: 1 } });
    expect(unrequested.status).toBe(403);
    await requestMove(p.id, 9);
    const unknown = await call("POST", "/v1/project/move", { key: p.key, body: { shard: 9 } });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error.message).toContain("EVENTS_9");
    expect(await shardOf(p.id)).toEqual({ shard: 0, move_to: 9 });

    await requestMove(p.id, 1);
    const started = await call("POST", "/v1/project/move", { key: p.key, body: { shard: 1 } });
    expect(started.status).toBe(200);
    // The drain is the real one here: the request ends once the move waits out the shard cache.
    expect(started.json.data).toMatchObject({ status: "draining", from: 0, to: 1 });
    expect(started.json.data.waitSeconds).toBeGreaterThan(0);
    // Still readable from both shards meanwhile; the ledger writes to the new one.
    expect(await countOn(env.EVENTS_0, p.id)).toMatchObject({ events: 3 });
    // The switching call recorded the move (witness.project.moved) on the new shard.
    expect((await ingest(p.key, { action: "doc.after-switch" })).status).toBe(201);
    expect(await countOn(env.EVENTS_1, p.id)).toMatchObject({ events: 5 });
    const other = await call("POST", "/v1/project/move", { key: p.key, body: { shard: 0 } });
    expect(other.status).toBe(400);
    await runMove(p.id, 1);
    expect(await countOn(env.EVENTS_0, p.id)).toMatchObject({ events: 0 });
    await expectIntact(p.key, 5);
  });
});

describe("moving a project keeps its job records and its erasures under way", () => {
  it("moves job records and pending erasures with the events: reads on the new shard still hide an erasure not yet applied", async () => {
    const p = await createProject(undefined, { shard: 0 });
    await ingestMany(p.key, events(6, "records"));
    const job = await call("POST", "/v1/jobs", { key: p.key, body: { type: "verify" } });
    expect(job.status).toBe(202);
    // An erasure accepted but not yet applied (its job not run): only its pending entry hides the values.
    const subject = [...new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode("id:u_3")))].map((b) => b.toString(16).padStart(2, "0")).join("");
    await env.EVENTS_0.prepare("INSERT INTO pending_erasures (project_id, erasure_id, by, subject_sha256, organization, erased_at, through_seq) VALUES (?, 99, 'id', ?, NULL, ?, 6)")
      .bind(p.id, subject, new Date().toISOString())
      .run();
    const hidden = async () => ((await call("GET", "/v1/events?actor_id=u_3", { key: p.key })).json.data as unknown[]).length;
    expect(await hidden()).toBe(0);
    await requestMove(p.id, 1);
    await runMove(p.id, 1);
    expect(await env.EVENTS_1.prepare("SELECT count(*) AS n FROM pending_erasures WHERE project_id = ?").bind(p.id).first()).toEqual({ n: 1 });
    expect(await hidden()).toBe(0);
    expect((await call("GET", `/v1/jobs/${job.json.data.id}`, { key: p.key })).status).toBe(200);
    expect(await env.EVENTS_0.prepare("SELECT (SELECT count(*) FROM jobs WHERE project_id = ?1) + (SELECT count(*) FROM pending_erasures WHERE project_id = ?1) AS n").bind(p.id).first()).toEqual({ n: 0 });
  });
});
