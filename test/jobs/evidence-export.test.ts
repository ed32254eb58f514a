import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { checkEvidence } from "../../src/scripts/evidence-check.mjs";
import { call, createProject, ingestMany } from "../helpers";
import { eraseApplied } from "../chain/erasure-helpers";
import { archiveAll } from "../storage/archive-helpers";
import { ago, plan, purgeSteps } from "../storage/retention-helpers";
import { loadKeyring } from "../../src/sealing/signing-keys";
import { signGap, type UnsignedGap } from "../../src/chain/gap-records";
import { getBytes, waitForJob } from "./job-helpers";

const at = (i: number) => new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString();
const events = (n: number, from = 0) =>
  Array.from({ length: n }, (_, k) => {
    const i = from + k;
    return { action: `doc.${i % 3}`, actor: { id: `u_${i % 4}`, email: `u${i % 4}@example.com` }, targets: [{ type: "doc", id: `d${i}` }], metadata: { i, note: "ünï ✓" }, occurred_at: at(i) };
  });

type Files = Map<string, Uint8Array>;

async function evidenceExport(key: string, filters: Record<string, unknown> = {}): Promise<Files> {
  const created = await call("POST", "/v1/jobs", { key, body: { type: "export", format: "json", evidence: true, part_rows: 10, ...filters } });
  expect(created.status).toBe(202);
  const job = await waitForJob(key, created.json.data.id);
  expect(job.status, JSON.stringify(job.error)).toBe("succeeded");
  expect(job.files.at(-1).name).toBe("manifest.json");
  const files: Files = new Map();
  for (const f of job.files) files.set(f.name, (await getBytes(key, f.url)).bytes);
  return files;
}

const vkeyOf = async (key: string) => (await call("GET", "/v1/log", { key })).json.data.vkey as string;
const utf8 = (b: Uint8Array) => new TextDecoder().decode(b);
const bytes = (s: string) => new TextEncoder().encode(s);

function check(files: Files, vkey: string): Promise<any> {
  return checkEvidence({ manifest: utf8(files.get("manifest.json")!), vkey, readFile: async (n: string) => files.get(n) ?? null, names: [...files.keys()] });
}

/** A copy with one file's text changed. */
function edit(files: Files, name: string, change: (text: string) => string): Files {
  const copy = new Map(files);
  copy.set(name, bytes(change(utf8(files.get(name)!))));
  return copy;
}

describe("evidence exports", () => {
  it("prove every row, hot, archived and erased, against the signed log, and refuse every tampered copy", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(30));
    await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(p.id).run();
    await archiveAll(p.id, 10);
    await ingestMany(p.key, events(12, 30));
    expect((await eraseApplied(p.key, "/v1/actors/u_1")).status).toBe(202);
    const vkey = await vkeyOf(p.key);
    const files = await evidenceExport(p.key);
    const good = await check(files, vkey);
    expect(good).toMatchObject({ ok: true, rows: 43, complete: true, tree_size: 43 });
    // 42 events and the erasure's own self-audit event.
    expect(good.erased).toBeGreaterThan(0);
    const manifest = JSON.parse(utf8(files.get("manifest.json")!));
    const parts = manifest.files.map((f: { name: string }) => f.name);
    expect(parts.length).toBeGreaterThanOrEqual(5);

    const refusals: Array<[string, Files, RegExp]> = [
      ["altered row", edit(files, parts[1], (t) => t.replace('"doc.', '"dox.')), /not the file the manifest names/],
      ["reordered files", new Map([...files, [parts[0], files.get(parts[1])!], [parts[1], files.get(parts[0])!]]), /not the file the manifest names/],
      ["truncated: last part gone", new Map([...files].filter(([n]) => n !== parts.at(-1))), /is missing/],
      ["truncated: cut short", edit(files, parts[2], (t) => t.slice(0, -40)), /not the file the manifest names/],
      ["padded file", edit(files, parts[0], (t) => `${t}\n`), /not the file the manifest names/],
      ["padded folder", new Map([...files, ["part-999999.json", files.get(parts[0])!]]), /not part of this export/],
      ["manifest edited", edit(files, "manifest.json", (t) => JSON.stringify({ ...JSON.parse(t), rows: 42 })), /changed after the log signed it/],
    ];
    for (const [what, copy, reason] of refusals) {
      const result = await check(copy, vkey);
      expect(result.ok, what).toBe(false);
      expect(result.reason, what).toMatch(reason);
    }

    // A foreign checkpoint: another project's log, its own manifest or its checkpoint spliced into ours.
    const q = await createProject();
    await ingestMany(q.key, events(3));
    const foreign = await evidenceExport(q.key);
    expect((await check(foreign, await vkeyOf(q.key))).ok).toBe(true);
    expect((await check(foreign, vkey)).reason).toMatch(/signature does not verify|is for log/);
    const theirs = JSON.parse(utf8(foreign.get("manifest.json")!)).checkpoint;
    const spliced = edit(files, "manifest.json", (t) => JSON.stringify({ ...JSON.parse(t), checkpoint: theirs }));
    expect((await check(spliced, vkey)).reason).toMatch(/changed after the log signed it/);
    expect((await call("POST", "/v1/jobs", { key: p.key, body: { type: "export", format: "csv", evidence: true } })).json.error.details).toBeTruthy();
  });

  it("catch rows a database writer altered before the export, even with their hashes recomputed", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(12));
    const vkey = await vkeyOf(p.key);
    await p.db.prepare("UPDATE events SET action = 'doc.forged' WHERE project_id = ? AND seq = 5").bind(p.id).run();
    const altered = await check(await evidenceExport(p.key), vkey);
    expect(altered).toMatchObject({ ok: false });
    expect(altered.reason).toMatch(/row 5: its fields do not give its hash/);

    // The writer also recomputes row 5's hash from its forged fields: the log's tree still has the old leaf.
    const files = await evidenceExport(p.key);
    const part = [...files.keys()].find((n) => utf8(files.get(n)!).includes('"seq":5,'))!;
    const doc = JSON.parse(utf8(files.get(part)!));
    const row = doc.rows.find((r: { seq: number }) => r.seq === 5);
    const { canonicalize } = await import("../../src/scripts/receipt-check.mjs");
    const payload = canonicalize({ action: row.action, actor_type: row.actor.type, id: row.id, metadata: row.metadata, occurred_at: row.occurred_at, organization: row.organization, pii: row.pii_commitment, project_id: row.project_id, seq: row.seq, targets: row.targets, v: 1 });
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes((row.prev_hash ?? "") + payload)));
    const hash = [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
    await p.db.prepare("UPDATE events SET hash = ? WHERE project_id = ? AND seq = 5").bind(hash, p.id).run();
    const rehashed = await check(await evidenceExport(p.key), vkey);
    expect(rehashed.reason).toMatch(/not where the proof puts them in the signed tree/);
  });

  it("prove a filtered export's rows, and refuse it with a row dropped", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(24));
    const vkey = await vkeyOf(p.key);
    const files = await evidenceExport(p.key, { actor_id: "u_2" });
    const good = await check(files, vkey);
    expect(good).toMatchObject({ ok: true, rows: 6, complete: false });
    const manifest = JSON.parse(utf8(files.get("manifest.json")!));
    expect(manifest.filters).toEqual({ actor_id: "u_2" });
    const name = manifest.files[0].name;
    const doc = JSON.parse(utf8(files.get(name)!));
    const dropped = JSON.stringify({ ...doc, rows: doc.rows.slice(1) });
    expect((await check(edit(files, name, () => dropped), vkey)).reason).toMatch(/not the file the manifest names/);
    // Dropped and the manifest's size, hash and count brought along: its signature no longer holds.
    const sha = [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes(dropped)))].map((b) => b.toString(16).padStart(2, "0")).join("");
    const forged = { ...manifest, rows: manifest.rows - 1, files: [{ ...manifest.files[0], bytes: bytes(dropped).length, sha256: sha, rows: manifest.files[0].rows - 1 }, ...manifest.files.slice(1)] };
    const both = edit(edit(files, name, () => dropped), "manifest.json", () => JSON.stringify(forged));
    expect((await check(both, vkey)).reason).toMatch(/changed after the log signed it/);
  });

  describe("retention gaps", () => {
    /** Twelve events, seqs 5-7 of them debug.trace ten days old. */
    async function withOldDebug() {
      const p = await createProject();
      const old = events(12).map((e, i) => (i >= 4 && i <= 6 ? { ...e, action: "debug.trace", occurred_at: ago(10) } : e));
      await ingestMany(p.key, old);
      return p;
    }
    const hashAt = async (db: D1Database, projectId: string, seq: number) =>
      (await db.prepare("SELECT hash FROM events WHERE project_id = ? AND seq = ?").bind(projectId, seq).first<{ hash: string }>())!.hash;

    /** What a database writer does: delete seqs 5-7 and plant a gap record over them (`edits` changed), signed as `signature` says. */
    async function plantGap(p: Awaited<ReturnType<typeof createProject>>, signature: (gap: UnsignedGap) => Promise<string>, edits: Partial<UnsignedGap> = {}) {
      const before_hash = await hashAt(p.db, p.id, 4);
      const last_hash = await hashAt(p.db, p.id, 7);
      const gap: UnsignedGap = { project_id: p.id, before_hash, last_hash, first_seq: 5, last_seq: 7, purged_count: 3, purged_at: new Date().toISOString(), rules: null, ...edits };
      await p.db.prepare("DELETE FROM events WHERE project_id = ? AND seq BETWEEN 5 AND 7").bind(p.id).run();
      await p.db
        .prepare("INSERT INTO retention_gaps (project_id, before_hash, last_hash, first_seq, last_seq, purged_count, purged_at, signature, rules) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
        .bind(p.id, gap.before_hash, gap.last_hash, gap.first_seq, gap.last_seq, gap.purged_count, gap.purged_at, await signature(gap), gap.rules)
        .run();
    }

    async function refused(key: string) {
      const created = await call("POST", "/v1/jobs", { key, body: { type: "export", format: "json", evidence: true, part_rows: 10 } });
      expect(created.status).toBe(202);
      const job = await waitForJob(key, created.json.data.id);
      expect(job.status).toBe("failed");
      expect(job.files.some((f: { name: string }) => f.name === "manifest.json")).toBe(false);
      return job.error;
    }

    it("lists a purge's gap in a complete export the offline check accepts", async () => {
      const p = await withOldDebug();
      await plan(p.key, [{ pattern: "debug.*", days: 5 }]);
      expect((await purgeSteps(p.id)).purged).toBe(3);
      const files = await evidenceExport(p.key);
      const manifest = JSON.parse(utf8(files.get("manifest.json")!));
      expect(manifest.gaps).toMatchObject([{ first_seq: 5, last_seq: 7, purged_count: 3 }]);
      expect(await check(files, await vkeyOf(p.key))).toMatchObject({ ok: true, complete: true, gaps: 1 });
    });

    it("refuse to sign over events a database writer deleted under a planted gap record", async () => {
      const p = await withOldDebug();
      await plantGap(p, async () => `v1:${"0".repeat(64)}`);
      const error = await refused(p.key);
      expect(error.code).toBe("EVIDENCE_REFUSED");
      expect(error.message).toMatch(/retention gap record \d+ \(seqs 5-7\) is not signed by this service's keys/);
      expect(error.message).toMatch(/verify would report chain_broken/);
      // What the export refused to vouch for, verify refuses too.
      const verified = await call("GET", "/v1/events/verify", { key: p.key });
      expect(verified.json.data).toMatchObject({ ok: false, failure: { reason: "chain_broken" } });
    });

    it("refuse a signed gap record whose hashes are not the log's at its ends", async () => {
      const p = await withOldDebug();
      const ring = await loadKeyring(env.SIGNING_KEYS);
      // Signed with the service's own key (as if it had leaked), but naming another hash before the hole than the log's.
      await plantGap(p, (gap) => signGap(ring, gap), { before_hash: "ab".repeat(32) });
      const error = await refused(p.key);
      expect(error).toMatchObject({ code: "EVIDENCE_REFUSED" });
      expect(error.message).toMatch(/\(seqs 5-7\) does not bridge the events the log holds at its ends/);
    });
  });
});
