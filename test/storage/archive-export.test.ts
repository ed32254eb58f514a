import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ledgerOf } from "../../src/chain/ledger";
import type { Selection } from "../../src/model/event-query";
import { exportPart, type ExportPartState } from "../../src/reads/export-part";
import { checkArchives } from "../../src/storage/archive-check";
import { companionKey, type Segment } from "../../src/storage/archive-segments";
import { BASE, createProject, ingestMany, parseCsv } from "../helpers";
import { eraseApplied } from "../chain/erasure-helpers";
import { alarmsUntil, forgetCompanionRecords } from "./archive-helpers";

/**
 * Archived segments are exported from companions rendered at seal time; the
 * download must stay exactly what the hot tier gives for the same events.
 * occurred_at rises with seq (three events per instant, so ties split across
 * segments), which makes the hot and the archived order the same.
 */
const at = (i: number) => new Date(Date.UTC(2026, 0, 1) + Math.floor(i / 3) * 60_000).toISOString();
const events = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    action: i % 7 === 0 ? '=HYPERLINK("http://evil.test")' : `doc.${i % 3}`,
    ...(i % 4 === 0 ? {} : { organization: `org_${i % 2}` }),
    ...(i % 5 === 0 ? {} : { actor: { id: `u_${i % 4}`, name: i % 6 === 0 ? 'Quote "me", ok;\nnext' : `Ünïcode ${i} ✓`, email: `u${i % 4}@example.com` } }),
    ...(i % 2 === 0 ? { targets: [{ type: "doc", id: `d${i}`, name: "Plan, v2" }] } : {}),
    metadata: { i, note: i % 3 === 0 ? "-1+2" : "x;y" },
    occurred_at: at(i),
  }));

/** The download's exact bytes, as a client receives them. */
async function download(key: string, query: string): Promise<{ status: number; bytes: Uint8Array }> {
  const res = await exports.default.fetch(new Request(`${BASE}/v1/exports?${query}`, { headers: { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "10.9.9.9" } }));
  return { status: res.status, bytes: new Uint8Array(await res.arrayBuffer()) };
}

const text = (bytes: Uint8Array) => new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);

/** Byte for byte; compared as text too, so a failure shows where. */
function expectSameBytes(actual: Uint8Array, expected: Uint8Array, what: string) {
  expect(text(actual), what).toBe(text(expected));
  expect(actual.byteLength, what).toBe(expected.byteLength);
  expect(actual.every((b, i) => b === expected[i]), what).toBe(true);
}

async function segmentsOf(db: D1Database, projectId: string) {
  return (await db.prepare("SELECT * FROM archive_segments WHERE project_id = ? ORDER BY first_seq").bind(projectId).all<Segment>()).results;
}

/** Seals `count` segments of `rows` from the oldest hot events. */
async function archive(projectId: string, rows: number, count = 100) {
  await env.DB.prepare("UPDATE projects SET hot_days = 0 WHERE id = ?").bind(projectId).run();
  const ledger = ledgerOf(env, projectId);
  for (let i = 0; i < count; i++) if ((await ledger.archiveSegment(new Date().toISOString(), { segmentRows: rows })).done) break;
  await env.DB.prepare("UPDATE projects SET hot_days = NULL WHERE id = ?").bind(projectId).run();
}

async function stagedCount(projectId: string) {
  return (await env.EXPORTS.list({ prefix: `exports/${projectId}/` })).objects.length;
}

async function gunzip(bytes: ArrayBuffer): Promise<string> {
  return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text();
}

describe("archived export from pre-rendered companions", () => {
  it("downloads exactly the bytes the hot tier gave, in CSV and JSON, whole, windowed and filtered", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(150));
    const queries = ["format=csv", "format=json", "format=csv&actor_id=u_1", "format=json&actions_exclude=doc.1"];
    const windowOf = (from: number, to: number) => `date_from=${encodeURIComponent(at(from))}&date_to=${encodeURIComponent(at(to))}`;
    // Segments of 40 (seqs 1-40, 41-80, 81-120; 121-150 stay hot). The first window covers the
    // second and third segments whole (and one event of the first, which shares their first instant);
    // the second cuts through segments and the hot tier.
    for (const w of [windowOf(40, 119), windowOf(50, 130)]) queries.push(`format=csv&${w}`, `format=json&${w}`);
    const hot = new Map<string, Uint8Array>();
    for (const q of queries) {
      const res = await download(p.key, q);
      expect(res.status, q).toBe(200);
      hot.set(q, res.bytes);
    }

    await archive(p.id, 40, 3);
    const segments = await segmentsOf(p.db, p.id);
    expect(segments.map((s) => [s.first_seq, s.last_seq])).toEqual([[1, 40], [41, 80], [81, 120]]);
    expect(segments.every((s) => /^[0-9a-f]{64}$/.test(s.csv_sha256!) && /^[0-9a-f]{64}$/.test(s.json_sha256!) && s.csv_bytes! > 0 && s.json_bytes! > 0)).toBe(true);
    for (const q of queries) expectSameBytes((await download(p.key, q)).bytes, hot.get(q)!, q);

    // Whole segments are streamed as they are, not staged: only the hot batch is.
    const before = await stagedCount(p.id);
    await download(p.key, "format=json");
    expect(await stagedCount(p.id)).toBe(before + 1);
    // A filter takes the row path: the hot batch and one staged batch per segment.
    await download(p.key, "format=json&actor_id=u_1");
    expect(await stagedCount(p.id)).toBe(before + 1 + 1 + 3);
  }, 60_000);

  it("stays exact after an erasure rewrote the segments, with the companions scrubbed too", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(90));
    await archive(p.id, 30);
    const before = await segmentsOf(p.db, p.id);
    expect(before.length).toBe(3);
    expect((await eraseApplied(p.key, "/v1/actors/u_1")).status).toBe(202);

    const after = await segmentsOf(p.db, p.id);
    expect(after.map((s) => s.object_key)).not.toEqual(before.map((s) => s.object_key));
    for (const s of before) for (const format of ["csv", "json"] as const) expect(await env.ARCHIVE.get(companionKey(s.object_key, format))).toBeNull();
    for (const s of after) {
      for (const format of ["csv", "json"] as const) {
        const body = await gunzip(await (await env.ARCHIVE.get(companionKey(s.object_key, format)))!.arrayBuffer());
        expect(body).not.toContain("u1@example.com");
      }
    }
    // Everything is archived, so the first batch is a companion: JSON opens with "[" and no comma.
    // The same selection through the row path (an exclusion of an action no event has) is the reference.
    for (const format of ["csv", "json"]) {
      const fast = (await download(p.key, `format=${format}`)).bytes;
      expectSameBytes(fast, (await download(p.key, `format=${format}&actions_exclude=none.such`)).bytes, format);
      // 90 events and the erasure's own record (witness.actor.erased).
      if (format === "json") expect(JSON.parse(text(fast)).length).toBe(91);
    }
  }, 60_000);

  it("takes the row path for segments without a companion, or with a stale or missing one, until the archiver backfills", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(80));
    const hot = { csv: (await download(p.key, "format=csv")).bytes, json: (await download(p.key, "format=json")).bytes };
    await archive(p.id, 20);
    const [first, second, third] = await segmentsOf(p.db, p.id);
    // Sealed before companions existed (no hashes in its index row, no record in the ledger).
    await p.db.prepare("UPDATE archive_segments SET csv_sha256 = NULL, csv_bytes = NULL, json_sha256 = NULL, json_bytes = NULL WHERE project_id = ? AND first_seq = ?").bind(p.id, first.first_seq).run();
    await forgetCompanionRecords(p.id, [first]);
    // A companion that no longer matches what the ledger recorded must never be served.
    const stale = await new Response(new Blob(["stale,row\r\n"]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer();
    await env.ARCHIVE.put(companionKey(second.object_key, "csv"), stale);
    await env.ARCHIVE.put(companionKey(second.object_key, "json"), stale);
    await env.ARCHIVE.delete([companionKey(third.object_key, "csv"), companionKey(third.object_key, "json")]);
    let staged = await stagedCount(p.id);
    expectSameBytes((await download(p.key, "format=csv")).bytes, hot.csv, "csv");
    expectSameBytes((await download(p.key, "format=json")).bytes, hot.json, "json");
    // Three of the four segments went row by row, each batch staged.
    expect(await stagedCount(p.id)).toBe(staged + 6);

    // Once nothing is due, the archiver gives the older segment its companions (and leaves the others' hashes alone).
    await archive(p.id, 20);
    const after = await segmentsOf(p.db, p.id);
    expect(after[0].csv_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(after[0].json_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(after.slice(1)).toEqual([second, third, after[3]]);
    staged = await stagedCount(p.id);
    expectSameBytes((await download(p.key, "format=csv")).bytes, hot.csv, "csv after the backfill");
    expectSameBytes((await download(p.key, "format=json")).bytes, hot.json, "json after the backfill");
    expect(await stagedCount(p.id)).toBe(staged + 4);
  }, 60_000);

  it("has the daily cron backfill companions even for a project whose hot window is off", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(30));
    await archive(p.id, 10);
    const hot = (await download(p.key, "format=json")).bytes;
    await p.db.prepare("UPDATE archive_segments SET csv_sha256 = NULL, csv_bytes = NULL, json_sha256 = NULL, json_bytes = NULL WHERE project_id = ?").bind(p.id).run();
    await checkArchives(env, new Date());
    await alarmsUntil(p.id, async () => (await segmentsOf(p.db, p.id)).every((s) => s.csv_sha256 !== null && s.json_sha256 !== null));
    const segments = await segmentsOf(p.db, p.id);
    expect(segments.length).toBe(3);
    for (const s of segments) expect([s.csv_sha256, s.json_sha256].every((h) => /^[0-9a-f]{64}$/.test(h!))).toBe(true);
    const staged = await stagedCount(p.id);
    expectSameBytes((await download(p.key, "format=json")).bytes, hot, "json");
    expect(await stagedCount(p.id)).toBe(staged);
  }, 60_000);

  it("never writes a row twice when a segment is sealed from rows the hot walk already wrote", async () => {
    const p = await createProject();
    await ingestMany(p.key, events(120));
    const sel: Selection = { projectId: p.id, organization: null, actorId: null, ipAddress: null, dateFrom: null, dateTo: null, actions: null, exclude: [] };
    // One batch of 50 rows per part, each part as its own invocation would run it, from the state the last one left.
    let state: ExportPartState = {
      exportId: crypto.randomUUID(), projectId: p.id, format: "csv", phase: "plan", sel, hot: null, cursor: null, base: 0,
      marks: [], segBefore: null, skip: 0, n: 0, lastStaged: null, batch: 50, pages: 1,
    };
    // The hot walk is done: the cron seals the oldest 40 (already written) just before the archive is first read.
    let sealed = false;
    // Reads of a project's events go to D1 in batches, with the backlog mark (src/storage/own-writes.ts).
    const shard = new Proxy(p.db, {
      get(target, key) {
        if (key === "batch") {
          return async (statements: D1PreparedStatement[]) => {
            const archiveRead = statements.some((st) => (st as unknown as { statement: string }).statement.includes("ORDER BY s.first_seq DESC LIMIT ?5"));
            if (archiveRead && !sealed) (await archive(p.id, 40, 1), (sealed = true));
            return target.batch(statements);
          };
        }
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const binding = `EVENTS_${p.shard}`;
    const sealing = new Proxy(env, { get: (target, key) => (key === binding ? shard : Reflect.get(target, key)) }) as Env;
    let csv = "";
    for (let i = 0; i < 20; i++) {
      const part = await exportPart(sealing, state);
      csv += part.chunks.map((c) => new TextDecoder().decode(c)).join("");
      state = part.state;
      if (part.last) break;
    }
    expect(sealed).toBe(true);
    expect((await segmentsOf(p.db, p.id)).map((s) => [s.first_seq, s.last_seq])).toEqual([[1, 40]]);
    const [header, ...rows] = parseCsv(csv);
    const seqs = rows.map((r) => Number(r[header.indexOf("seq")]));
    expect(seqs.length).toBe(120);
    expect(new Set(seqs).size).toBe(120);
  }, 60_000);
});
