import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { idMillis } from "../../src/model/event-id";
import { ledgerOf } from "../../src/chain/ledger";
import { findChainRow } from "../../src/receipts/receipt";
import { call, createProject, ingestMany } from "../helpers";
import { archiveAll, forgetArchivedIds, segmentsOf } from "../storage/archive-helpers";

/**
 * Issue 26, item 6: a public receipt lookup (no credential, no project)
 * resolves an id to one project and the segment holding it (issue 38: by the
 * project tag and millisecond a located id carries, with no index row per
 * id), and reads nothing of any other project's archive.
 */
const events = (n: number, tag: string) => Array.from({ length: n }, (_, i) => ({ action: `doc.${tag}`, actor: { id: `u_${i}` }, metadata: { i } }));

/** The worker's bindings with the archive bucket counting the objects read. */
function countingEnv() {
  const reads: string[] = [];
  const bucket = env.ARCHIVE;
  const ARCHIVE = new Proxy(bucket, {
    get(target, prop) {
      if (prop === "get") return (key: string, options?: R2GetOptions) => (reads.push(key), target.get(key, options));
      const value = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { reads, env: { ...env, ARCHIVE } as Env };
}

/** Same millisecond (so the same archived time range), other random bits: an id nobody was given. */
const madeUp = (id: string) => `${id.slice(0, 24)}${id.slice(24).split("").reverse().join("")}`;

async function twoProjectsOnOneShard() {
  const a = await createProject(undefined, { shard: 0 });
  const b = await createProject(undefined, { shard: 0 });
  // Interleaved, so both projects' segments cover the same receive times.
  const storedA: any[] = [];
  const storedB: any[] = [];
  for (let i = 0; i < 3; i++) {
    storedA.push(...(await ingestMany(a.key, events(10, "a"))));
    storedB.push(...(await ingestMany(b.key, events(10, "b"))));
  }
  await archiveAll(a.id, 10);
  await archiveAll(b.id, 10);
  return { a: { ...a, stored: storedA }, b: { ...b, stored: storedB } };
}

describe("public receipt lookup of archived events", () => {
  it("reads one segment of the event's own project; another project's damaged segment does not matter; a made-up id reads none", async () => {
    const { a, b } = await twoProjectsOnOneShard();
    await env.ARCHIVE.delete((await segmentsOf(b.db, b.id)).map((s) => s.object_key));
    const target = a.stored[15];

    const json = await call("GET", `/v1/receipts/${target.id}`);
    expect(json.status).toBe(200);
    expect(json.json.data).toMatchObject({ event_id: target.id, exists: true, valid: true });
    expect((await call("GET", `/receipts/${target.id}`)).status).toBe(200);

    const found = countingEnv();
    expect((await findChainRow(found.env, target.id))?.id).toBe(target.id);
    expect(found.reads).toEqual([(await segmentsOf(a.db, a.id))[1].object_key]);

    const unknown = countingEnv();
    expect(await findChainRow(unknown.env, madeUp(target.id))).toBeNull();
    expect(unknown.reads).toEqual([]);
    // A made-up id with the event's own time and project tag: the summaries of that millisecond's segments rule it out
    // (a false positive, rare at this size, would read one of them), and nothing is found.
    const sameMillisecond = countingEnv();
    const forged = `${target.id.slice(0, 15)}${target.id.slice(15, 18) === "000" ? "001" : "000"}${target.id.slice(18)}`;
    expect(await findChainRow(sameMillisecond.env, forged)).toBeNull();
    const receivedAt = new Date(idMillis(target.id)!).toISOString();
    const holding = (await segmentsOf(a.db, a.id)).filter((s) => s.first_received_at <= receivedAt && s.last_received_at >= receivedAt);
    expect(holding.length).toBeGreaterThan(0);
    expect(sameMillisecond.reads.every((key) => holding.some((s) => s.object_key === key))).toBe(true);
    expect(sameMillisecond.reads.length).toBeLessThan(holding.length + 1);
    // Located ids need no index row of their own.
    expect((await a.db.prepare("SELECT count(*) AS n FROM archive_ids WHERE project_id = ?").bind(a.id).first<{ n: number }>())!.n).toBe(0);
    expect((await call("GET", `/v1/receipts/${madeUp(b.stored[3].id)}`)).status).toBe(404);
    // The damaged project's own receipts say so.
    expect((await call("GET", `/v1/receipts/${b.stored[3].id}`)).json.error.code).toBe("ARCHIVE_DAMAGED");
  });

  it("keeps working after the project moves shards, and leaves nothing of it behind", async () => {
    const { a } = await twoProjectsOnOneShard();
    await env.DB.prepare("UPDATE projects SET move_to = 1 WHERE id = ?").bind(a.id).run();
    for (let i = 0; i < 50; i++) if ((await ledgerOf(env, a.id).moveShard(1, { drainSeconds: 0 })).status === "done") break;
    const count = (db: D1Database, sql: string) => db.prepare(sql).bind(a.id).first<{ n: number }>().then((r) => r!.n);
    expect(await count(env.EVENTS_0, "SELECT count(*) AS n FROM archive_segments WHERE project_id = ?")).toBe(0);
    // The segments moved with what locates their ids (their tag), and need no row per id on either shard.
    expect(await count(env.EVENTS_1, "SELECT count(*) AS n FROM archive_segments WHERE project_id = ? AND id_tag IS NOT NULL")).toBe(3);
    for (const db of [env.EVENTS_0, env.EVENTS_1]) expect(await count(db, "SELECT count(*) AS n FROM archive_ids WHERE project_id = ?")).toBe(0);
    const found = countingEnv();
    expect((await findChainRow(found.env, a.stored[22].id))?.id).toBe(a.stored[22].id);
    expect(found.reads.length).toBe(1);
    expect((await call("GET", `/v1/receipts/${a.stored[22].id}`)).json.data.valid).toBe(true);
  });

  it("finds events of segments sealed before the id index, until the archiver indexes them", async () => {
    const { a } = await twoProjectsOnOneShard();
    await forgetArchivedIds(a.db, a.id);
    expect((await call("GET", `/v1/receipts/${a.stored[4].id}`)).json.data.valid).toBe(true);
    expect((await call("GET", `/v1/events/${a.stored[4].id}`, { key: a.key })).status).toBe(200);
    await archiveAll(a.id, 10);
    const indexed = await a.db.prepare("SELECT count(*) AS n FROM archive_ids WHERE project_id = ?").bind(a.id).first<{ n: number }>();
    expect(indexed!.n).toBe(30);
    const found = countingEnv();
    expect((await findChainRow(found.env, a.stored[4].id))?.id).toBe(a.stored[4].id);
    expect(found.reads.length).toBe(1);
  });
});
