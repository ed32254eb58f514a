import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import { checkArchives } from "../../src/storage/archive-check";
import { prepareRewrite, switchSegment } from "../../src/storage/archive-erase";
import { readSegment, type Segment } from "../../src/storage/archive-segments";
import { sweepUnindexed } from "../../src/storage/archive-sweep";
import { call, createProject, ingestMany } from "../helpers";
import { eraseApplied } from "../chain/erasure-helpers";
import { alarmsUntil } from "./archive-helpers";

const events = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ action: "doc.read", actor: { id: `u_${i % 3}`, email: `u${i % 3}@example.com` }, metadata: { i } }));

async function archiveAll(projectId: string) {
  await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(projectId).run();
  const ledger = ledgerOf(env, projectId);
  for (let i = 0; i < 50; i++) if ((await ledger.archiveSegment(new Date().toISOString(), { segmentRows: 10 })).done) return;
  throw new Error("archiving did not finish");
}

async function objectsOf(projectId: string): Promise<Map<string, string>> {
  const listed = await env.ARCHIVE.list({ prefix: `archive/${projectId}/` });
  const out = new Map<string, string>();
  for (const o of listed.objects) {
    // The sweep may delete an object between the listing and this read (alarmsUntil polls while it runs): gone is gone.
    const object = await env.ARCHIVE.get(o.key);
    if (!object) continue;
    out.set(o.key, await new Response(object.body.pipeThrough(new DecompressionStream("gzip"))).text());
  }
  return out;
}

describe("archive sweep", () => {
  it("an erasure interrupted before deleting the old segment objects leaves no personal data once the cron has run", async () => {
    const p = await createProject();
    // A project whose id starts with p's: its objects share p's prefix but for the slash.
    const neighbour = await createProject(`${p.id}0`);
    await ingestMany(p.key, events(30));
    await ingestMany(neighbour.key, events(12));
    await archiveAll(p.id);
    await archiveAll(neighbour.id);
    const old = await objectsOf(p.id);
    const neighbours = await objectsOf(neighbour.id);
    expect([...old.values()].some((text) => text.includes("u1@example.com"))).toBe(true);

    expect((await eraseApplied(p.key, "/v1/actors/u_1")).status).toBe(202);
    // The crash: the index row was switched to the scrubbed objects, the old ones were never deleted.
    for (const [key, text] of old) {
      const gz = new Response(new Blob([text]).stream().pipeThrough(new CompressionStream("gzip")));
      await env.ARCHIVE.put(key, await gz.arrayBuffer());
    }
    expect([...(await objectsOf(p.id)).values()].some((text) => text.includes("u1@example.com"))).toBe(true);

    // The next daily run, even with the hot window switched off since.
    await env.DB.prepare("UPDATE projects SET hot_days = NULL WHERE id = ?").bind(p.id).run();
    await checkArchives(env, new Date());
    await alarmsUntil(p.id, async () => ![...(await objectsOf(p.id)).values()].some((text) => text.includes("u1@example.com")));

    const left = await objectsOf(p.id);
    expect([...left.values()].some((text) => text.includes("u1@example.com"))).toBe(false);
    const { results } = await p.db.prepare("SELECT * FROM archive_segments WHERE project_id = ?").bind(p.id).all<Segment>();
    expect(results.length).toBe(3);
    // Exactly the objects the index names are kept: each segment and its two export companions.
    expect(left.size).toBe(results.length * 3);
    expect(results.every((s) => left.has(s.object_key))).toBe(true);
    expect(await objectsOf(neighbour.id)).toEqual(neighbours);
    // 20 events and the erasure's own record (witness.actor.erased).
    expect((await call("GET", "/v1/events/verify", { key: p.key })).json.data).toMatchObject({ ok: true, verified: 21, anonymized: 10 });
    const csv = await call("GET", "/v1/exports?format=csv", { key: p.key });
    expect(csv.status).toBe(200);
    expect(csv.text).not.toContain("u1@example.com");
  });
});

describe("archive sweep and a running erasure", () => {
  it("keeps the scrubbed copy an erasure wrote outside the lock and has not switched in yet; once switched, the old copy goes", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(20));
    await archiveAll(p.id);
    const [segment] = (await p.db.prepare("SELECT * FROM archive_segments WHERE project_id = ? ORDER BY first_seq").bind(p.id).all<Segment>()).results;
    const rewrite = (await prepareRewrite(env, segment, (r) => r.actor_id === "u_1", new Date().toISOString(), 77))!;
    expect(rewrite.next.segment.object_key).toContain(".e77.");
    // The tidy pass runs (it holds the lock the erasure waits for) while erasure 77 is still running: its new objects stay.
    expect(await sweepUnindexed(env, p.db, p.id, new Set([77]))).toBe(0);
    expect(await switchSegment(p.db, rewrite)).toBe(true);
    const rows = await readSegment(env, { ...segment, ...rewrite.next.segment });
    expect(rows.filter((r) => r.actor_id === "u_1")).toEqual([]);
    // The switch done, the old copy (with the erased values) is a leftover like any other.
    expect(await sweepUnindexed(env, p.db, p.id, new Set([77]))).toBe(3);
    expect(await env.ARCHIVE.head(segment.object_key)).toBeNull();
  });
});
