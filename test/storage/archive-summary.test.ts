import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import { element, ID_FORMAT, rowElements, summarise, targetElement, termElement, type SummaryRow } from "../../src/storage/archive-summary";
import { SummaryProbe } from "../../src/storage/summary-probe";
import { searchTerms } from "../../src/model/search-query";
import { call, createProject, ingestMany } from "../helpers";
import { eraseApplied } from "../chain/erasure-helpers";
import { jobBytes, waitForJob } from "../jobs/job-helpers";
import { alarmsUntil, archiveAll, segmentsOf } from "./archive-helpers";

const minute = (i: number) => new Date(Date.UTC(2026, 2, 1) + i * 60_000).toISOString();

/** 30 events in three segments of 10: one actor, organization, action, target and rare words only in the middle segment. */
async function projectWithRareActor() {
  const p = await createProject();
  await ingestMany(
    p.key,
    Array.from({ length: 30 }, (_, i) => {
      const rare = i === 14 || i === 17;
      return {
        action: rare ? "vault.unsealed" : "doc.read",
        organization: rare ? "org_rare" : "org_common",
        actor: rare ? { id: "u_rare", name: "Zebulon Quartermaine", email: "zq@example.com" } : { id: `u_${i % 3}`, name: `User ${i % 3}`, email: `u${i % 3}@example.com` },
        targets: [{ type: "doc", id: rare ? "d_rare" : `d_${i % 2}` }],
        occurred_at: minute(i),
      };
    }),
  );
  await archiveAll(p.id, 10);
  const segments = await segmentsOf(p.db, p.id);
  expect(segments.map((s) => [s.first_seq, s.last_seq])).toEqual([
    [1, 10],
    [11, 20],
    [21, 30],
  ]);
  return { p, segments };
}

async function summaryOf(db: D1Database, projectId: string, firstSeq: number) {
  return db.prepare("SELECT * FROM archive_summaries WHERE project_id = ? AND first_seq = ?").bind(projectId, firstSeq).first<SummaryRow>();
}

/** Deletes a segment's objects: a read of it now fails as archive damage, so a read that succeeds never touched it. */
async function removeObjects(objectKey: string) {
  await env.ARCHIVE.delete([objectKey, objectKey.replace(/\.jsonl\.gz$/, ".csv.gz"), objectKey.replace(/\.jsonl\.gz$/, ".json.gz")]);
}

describe("per-segment summaries", () => {
  it("answer for every value a segment holds, rule out most others, and hold no clear personal data", async () => {
    const rows = Array.from({ length: 200 }, (_, i) => ({
      organization: `org_${i % 7}`,
      actor_id: `user_${i}`,
      actor_email: `person${i}@example.com`,
      actor_name: `Ada Lovelace${i}`,
      ip_address: `192.0.2.${i % 250}`,
      action: `doc.${i % 5 === 0 ? "deleted" : "read"}`,
      targets: JSON.stringify([{ type: "invoice", id: `inv_${i}` }]),
    }));
    const summary = await summarise(env, { project_id: "p", first_seq: 1, sha256: "ab".repeat(32) }, rows);
    const ask = (groups: string[][]) => new SummaryProbe(env, groups).mayContain(summary.key_version, summary.filter);
    for (const r of rows.slice(0, 40)) {
      expect(await ask([[element("actor_id", r.actor_id)], [element("organization", r.organization)], [element("ip_address", r.ip_address)]])).toBe(true);
      expect(await ask([[element("actor_email", r.actor_email)], [targetElement("invoice", JSON.parse(r.targets)[0].id)], [element("target_type", "invoice")]])).toBe(true);
    }
    // Search terms by prefix, folded as the index folds them, longer than the stored prefixes too.
    for (const q of ["ada", "LOVELACE17", "person19@", "doc", "deleted"]) expect(await ask(searchTerms(q).map((t) => [termElement(t)]))).toBe(true);
    // One of several actions is enough.
    expect(await ask([[element("action", "doc.created"), element("action", "doc.deleted")]])).toBe(true);
    let falsePositives = 0;
    for (let i = 0; i < 500; i++) if (await ask([[element("actor_id", `stranger_${i}`)]])) falsePositives++;
    expect(falsePositives).toBeLessThan(25);
    expect(await ask([[termElement("zzzzqq")]])).toBe(false);
    // Keyed hashes only: no value, nor its plain SHA-256, is in the stored row.
    const stored = JSON.stringify(summary);
    for (const r of rows.slice(0, 20)) for (const v of [r.actor_id, r.actor_email, "Ada", r.ip_address]) expect(stored).not.toContain(v);
    expect(rowElements(rows[0]).size).toBeGreaterThan(10);
  });

  it("hold each row's event id (format 2), for lookups by id; a reader asking for ids of a format-1 filter reads the segment", async () => {
    const rows = Array.from({ length: 2_000 }, (_, i) => ({
      id: `0195f000-0000-7000-8000-${String(i).padStart(12, "0")}`,
      organization: `org_${i % 50}`,
      actor_id: `user_${i % 5000}`,
      actor_email: `user${i % 5000}@acme.test`,
      actor_name: `User ${i % 5000}`,
      ip_address: null,
      action: ["user.login.succeeded", "document.shared", "member.invited"][i % 3],
      targets: JSON.stringify([{ type: "document", id: `doc_${i}` }]),
    }));
    const summary = await summarise(env, { project_id: "p", first_seq: 1, sha256: "cd".repeat(32) }, rows);
    const byId = (id: string) => new SummaryProbe(env, [[element("id", id)]], [ID_FORMAT]).mayContain(summary.key_version, summary.filter);
    for (const r of rows.filter((_, i) => i % 20 === 0)) expect(await byId(r.id)).toBe(true);
    // A full segment's filter is at its size cap: still, most ids it does not hold are ruled out (each one a segment read saved).
    let falsePositives = 0;
    for (let i = 0; i < 500; i++) if (await byId(`0195f000-0000-7000-8000-9${String(i).padStart(11, "0")}`)) falsePositives++;
    expect(falsePositives).toBeLessThan(50);
    // A filter written before ids were in it answers "read it" to an id question, and still answers the others.
    const old = atob(summary.filter);
    const formatOne = { ...summary, filter: btoa(String.fromCharCode(1) + old.slice(1)) };
    expect(await new SummaryProbe(env, [[element("id", "not-there")]], [ID_FORMAT]).mayContain(formatOne.key_version, formatOne.filter)).toBe(true);
    expect(await new SummaryProbe(env, [[element("organization", "org_nowhere")]]).mayContain(formatOne.key_version, formatOne.filter)).toBe(false);
  });

  it("are written with each sealed segment, and list, search and filters read only the segments that may match", async () => {
    const { p, segments } = await projectWithRareActor();
    for (const s of segments) expect(await summaryOf(p.db, p.id, s.first_seq)).toMatchObject({ sha256: s.sha256 });
    // The first and last segments hold nothing rare: without their objects, a rare read still answers.
    await removeObjects(segments[0].object_key);
    await removeObjects(segments[2].object_key);
    const seqs = async (path: string) => {
      const res = await call("GET", path, { key: p.key });
      expect(res.status, JSON.stringify(res.json)).toBe(200);
      return res.json.data.map((e: { seq: number }) => e.seq);
    };
    expect(await seqs("/v1/events?actor_id=u_rare")).toEqual([18, 15]);
    expect(await seqs("/v1/events?organization=org_rare")).toEqual([18, 15]);
    expect(await seqs("/v1/events?target_type=doc&target_id=d_rare")).toEqual([18, 15]);
    expect(await seqs("/v1/events?action=vault.unsealed")).toEqual([18, 15]);
    expect(await seqs("/v1/events/search?q=quarterm")).toEqual([18, 15]);
    expect(await seqs("/v1/events/search?q=zebulon%20vault")).toEqual([18, 15]);
    // Exports too, the spec's streamed one and an export job.
    const exported = JSON.parse((await call("GET", "/v1/exports?format=json&actor_id=u_rare", { key: p.key })).text);
    expect(exported.map((e: { seq: number }) => e.seq)).toEqual([18, 15]);
    const created = await call("POST", "/v1/jobs", { key: p.key, body: { type: "export", format: "json", organization: "org_rare" } });
    const job = await waitForJob(p.key, created.json.data.id);
    expect(job.status, JSON.stringify(job.error)).toBe("succeeded");
    expect(JSON.parse(new TextDecoder().decode(await jobBytes(p.key, job))).map((e: { seq: number }) => e.seq)).toEqual([18, 15]);
    // A read that must look at every segment does meet the missing objects: they really are gone.
    expect((await call("GET", "/v1/events?actor_id=u_1", { key: p.key })).status).not.toBe(200);
  });

  it("a forged summary is not believed: the segment is read", async () => {
    const { p, segments } = await projectWithRareActor();
    const middle = await summaryOf(p.db, p.id, segments[1].first_seq);
    const empty = await summarise(env, { project_id: p.id, first_seq: segments[1].first_seq, sha256: segments[1].sha256 }, []);
    // A database writer swaps in a filter that holds nothing, keeping the row's MAC.
    await p.db.prepare("UPDATE archive_summaries SET filter = ? WHERE project_id = ? AND first_seq = ?").bind(empty.filter, p.id, segments[1].first_seq).run();
    expect(empty.filter).not.toBe(middle!.filter);
    const res = await call("GET", "/v1/events?actor_id=u_rare", { key: p.key });
    expect(res.json.data.map((e: { seq: number }) => e.seq)).toEqual([18, 15]);
    const erased = await eraseApplied(p.key, "/v1/actors/u_rare");
    expect(erased.anonymized).toBe(2);
  });

  it("an erasure reads only the segments that may hold the actor, and the rewritten summary no longer holds the erased values", async () => {
    const { p, segments } = await projectWithRareActor();
    await removeObjects(segments[0].object_key);
    await removeObjects(segments[2].object_key);
    const erased = await eraseApplied(p.key, "/v1/actors/u_rare");
    expect(erased.anonymized).toBe(2);
    const [after] = (await segmentsOf(p.db, p.id)).filter((s) => s.first_seq === 11);
    expect(after.sha256).not.toBe(segments[1].sha256);
    const summary = (await summaryOf(p.db, p.id, 11))!;
    expect(summary.sha256).toBe(after.sha256);
    const probe = (groups: string[][]) => new SummaryProbe(env, groups).mayContain(summary.key_version, summary.filter);
    expect(await probe([[element("actor_id", "u_rare")]])).toBe(false);
    expect(await probe([[element("actor_email", "zq@example.com")]])).toBe(false);
    expect(await probe([[termElement("zebulon")]])).toBe(false);
    // What the scrub keeps is still summarised.
    expect(await probe([[element("action", "vault.unsealed")]])).toBe(true);
  });

  it("segments sealed before summaries get theirs from the archiver's backfill, which resumes where it stopped", async () => {
    const { p, segments } = await projectWithRareActor();
    await p.db.prepare("DELETE FROM archive_summaries WHERE project_id = ?").bind(p.id).run();
    // A step at a time: each one backfills one segment, so a crash between steps leaves the rest for the next.
    const ledger = ledgerOf(env, p.id);
    await ledger.archiveSegment(new Date().toISOString(), { mode: "tidy" });
    const count = async () => (await p.db.prepare("SELECT count(*) AS n FROM archive_summaries WHERE project_id = ?").bind(p.id).first<{ n: number }>())!.n;
    expect(await count()).toBe(1);
    // A stale summary (its segment rewritten since) counts as missing.
    await p.db.prepare("UPDATE archive_summaries SET sha256 = 'stale' WHERE project_id = ?").bind(p.id).run();
    await ledger.archiveSoon();
    await alarmsUntil(p.id, async () => (await p.db.prepare("SELECT count(*) AS n FROM archive_summaries WHERE project_id = ? AND sha256 != 'stale'").bind(p.id).first<{ n: number }>())!.n === 3);
    for (const s of segments) expect((await summaryOf(p.db, p.id, s.first_seq))!.sha256).toBe(s.sha256);
    await removeObjects(segments[0].object_key);
    const res = await call("GET", "/v1/events?actor_id=u_rare", { key: p.key });
    expect(res.json.data.map((e: { seq: number }) => e.seq)).toEqual([18, 15]);
  });
});
