import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { restoreTuning } from "../../src/routes/project-restore";
import { call, createProject, createScopedKey, ingestMany } from "../helpers";
import { archiveAll, segmentsOf } from "./archive-helpers";
import { searchGroupsOf } from "./search-groups";

describe("restoring the archive into D1", () => {
  for (const keyed of [true, false]) it(`brings every archived event back hot, newest segment first, only with tiering off, and says so in the chain (${keyed ? "keyed" : "on the seq index"})`, async () => {
    const p = await createProject(undefined, keyed ? {} : { keyed: false });
    const { key: admin } = await createScopedKey(p.id, ["admin"]);
    await ingestMany(p.key, Array.from({ length: 30 }, (_, i) => ({ action: "doc.a", actor: { id: `u${i % 3}` }, metadata: { i } })));
    await archiveAll(p.id, 6);
    const segments = await segmentsOf(p.db, p.id);
    expect(segments.length).toBe(5);
    await env.DB.prepare("UPDATE projects SET hot_days = 30 WHERE id = ?").bind(p.id).run();
    // A hot window is still set: the archiver would seal the events again.
    const refused = await call("POST", "/v1/project/restore-archive", { key: admin });
    expect(refused.status).toBe(409);
    expect(refused.json.error.code).toBe("CONFLICT");
    expect((await call("POST", "/v1/project/restore-archive", { key: (await createScopedKey(p.id, ["read"])).key })).status).toBe(403);

    await env.DB.prepare("UPDATE projects SET hot_days = NULL WHERE id = ?").bind(p.id).run();
    // Nor into a shard past 80% of its high-water mark: restoring must not fill it.
    // Its estimate of freed bytes emptied too: other files' archiving in this runtime may have left it past the file's size.
    await env.DB.prepare("INSERT INTO shards (shard, high_water_bytes) VALUES (?1, 1) ON CONFLICT (shard) DO UPDATE SET high_water_bytes = 1, freed_bytes = 0").bind(p.shard).run();
    const full = await call("POST", "/v1/project/restore-archive", { key: admin });
    expect([full.status, full.json.error.code]).toEqual([409, "CONFLICT"]);
    expect(full.json.error.message).toContain("high-water mark");
    await env.DB.prepare("UPDATE shards SET high_water_bytes = NULL WHERE shard = ?").bind(p.shard).run();
    // One call restores all five segments, however loaded the machine (a call stops after about two seconds),
    // so the chain holds one record of it, which the counts below include.
    restoreTuning.budgetMs = 120_000;
    let done;
    try {
      done = await call("POST", "/v1/project/restore-archive", { key: admin });
    } finally {
      restoreTuning.budgetMs = 2000;
    }
    expect(done.json.data).toEqual({ status: "done", restored: 30, remaining: 0 });
    expect(await segmentsOf(p.db, p.id)).toEqual([]);
    expect((await p.db.prepare("SELECT count(*) AS n FROM events WHERE project_id = ?").bind(p.id).first())!.n).toBe(31);
    expect((await env.ARCHIVE.list({ prefix: segments[0].object_key.split("/").slice(0, 2).join("/") })).objects).toEqual([]);
    // Hot again: found by search (which reads D1 only), verified, and the restore is in the chain.
    expect((await call("GET", "/v1/events/search?q=doc&limit=100", { key: p.key })).json.data.length).toBe(30);
    const u1: Array<{ id: string; metadata: { i: number } }> = (await call("GET", "/v1/events/search?q=u1&limit=100", { key: p.key })).json.data;
    expect(u1.map((e: { metadata: { i: number } }) => e.metadata.i).sort((a: number, b: number) => a - b)).toEqual([1, 4, 7, 10, 13, 16, 19, 22, 25, 28]);
    // Indexed as commits are: an entry per group, not per event. A keyed project's groups (model/row-keys.ts) are
    // blocks of 16 seqs: 1-16, and 17-31, which the restore gave an entry before it filled; the restore's own record
    // (seq 31), committed after, joined that entry. An older project's are one per restored segment of 6, and the
    // restore's record starts the project's open group, whose entry waits until it is closed.
    // And found by id through commit spans, with no id index entry: a receipt and a get of every restored event. The
    // restore's record, alone in its commit and live, is found at its id's instant in the time index instead (migration 0037).
    expect(await searchGroupsOf(p.db, p.id)).toEqual(
      keyed ? { events: 31, worded: 31, groups: 2, entries: 2, unspanned: 1, open: 0 } : { events: 31, worded: 31, groups: 6, entries: 5, unspanned: 1, open: 1 },
    );
    expect((await call("GET", "/v1/events/search?q=restored&limit=100", { key: p.key })).json.data.map((e: { action: string }) => e.action)).toEqual(["witness.archive.restored"]);
    for (const e of u1) {
      expect((await call("GET", `/v1/events/${e.id}`, { key: p.key })).json.data).toEqual(e);
      expect((await call("GET", `/v1/receipts/${e.id}`)).status).toBe(200);
    }
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 31 });
    const audit = (await call("GET", "/v1/events?action=witness.archive.restored", { key: p.key })).json.data;
    expect(audit).toHaveLength(1);
    expect(audit[0].metadata).toEqual({ events: 30, segments_remaining: 0 });
    expect((await call("POST", "/v1/project/restore-archive", { key: admin })).json.data).toEqual({ status: "done", restored: 0, remaining: 0 });
  });
});
