import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { PURGE_BATCH, purgeBatch, type PurgePlan } from "../../src/chain/retention";
import { cutoffSql, orderRules, type RetentionRule } from "../../src/chain/retention-rules";
import { loadKeyring, type SigningKeyring } from "../../src/sealing/signing-keys";
import { verifyChain, verifyProject } from "../../src/chain/verify";
import { interceptPrepare } from "../helpers";
import { appendRows, K1, newProject, fixtureAnchor } from "./verify-fixtures";

const OLD = "2020-01-01T00:00:00.000Z";
const NOW = new Date("2026-06-01T00:00:00.000Z");

/** Each fixture project's plan, as its ledger would hold it. */
const plans = new Map<string, RetentionRule[]>();

function plan(projectId: string, pattern: string, days: number) {
  plans.set(projectId, [...(plans.get(projectId) ?? []).filter((r) => r.pattern !== pattern), { pattern, days }]);
}

function planOf(projectId: string): PurgePlan {
  return { rules: plans.get(projectId) ?? [], signedFrom: 1 };
}

async function gaps(projectId: string) {
  const { results } = await env.DB.prepare(
    "SELECT first_seq, last_seq, purged_count FROM retention_gaps WHERE project_id = ? ORDER BY first_seq",
  )
    .bind(projectId)
    .all();
  return results;
}

describe("retention rules", () => {
  it("ranks exact actions over longer prefixes over shorter ones over *", () => {
    const rules = [
      { pattern: "*", days: 1 },
      { pattern: "a.*", days: 2 },
      { pattern: "a.b.c", days: 3 },
      { pattern: "a.b.*", days: 4 },
    ];
    expect(orderRules(rules).map((r) => r.pattern)).toEqual(["a.b.c", "a.b.*", "a.*", "*"]);
  });

  it("turns the plan into one CASE with bound values, NULL when no rule matches (and for Witness's own records)", () => {
    const { sql, params } = cutoffSql([{ pattern: "debug.*", days: 1 }], NOW);
    expect(sql).toBe("CASE WHEN substr(action, 1, 8) = 'witness.' THEN NULL WHEN substr(action, 1, 6) = ? THEN ? ELSE NULL END");
    expect(params).toEqual(["debug.", "2026-05-31T00:00:00.000Z"]);
    expect(cutoffSql([{ pattern: "*", days: 30 }], NOW)).toEqual({
      sql: "CASE WHEN substr(action, 1, 8) = 'witness.' THEN NULL ELSE ? END",
      params: ["2026-05-02T00:00:00.000Z"],
    });
  });
});

describe("purgeBatch", () => {
  it("purges in bounded batches and keeps one gap record per hole, merged across batches", async () => {
    const p = await newProject();
    const count = PURGE_BATCH * 2 + 10;
    const rows = await appendRows(p, K1, [...Array.from({ length: count }, () => ({ occurred_at: OLD })), {}]);
    plan(p, "*", 30);
    const ring = await loadKeyring(K1);
    const first = await purgeBatch(env.DB, ring, p, planOf(p), NOW);
    expect(first).toEqual({ purged: PURGE_BATCH, refused: 0, done: false, lastSeq: PURGE_BATCH });
    const second = await purgeBatch(env.DB, ring, p, planOf(p), NOW, first.lastSeq);
    expect(second).toEqual({ purged: PURGE_BATCH, refused: 0, done: false, lastSeq: 2 * PURGE_BATCH });
    expect(await purgeBatch(env.DB, ring, p, planOf(p), NOW, second.lastSeq)).toEqual({ purged: 10, refused: 0, done: true, lastSeq: count });
    expect(await gaps(p)).toEqual([{ first_seq: 1, last_seq: count, purged_count: count }]);
    const result = await verifyChain(env.DB, ring, p, { from: null, to: null }, fixtureAnchor(p));
    expect(result).toMatchObject({ ok: true, verified: 1, gaps: [{ purged_count: count }] });
    expect(result.gaps[0].at).toBe(NOW.toISOString());
    expect(rows.length).toBe(count + 1);
  });

  it("joins a new run to the holes on both sides of it", async () => {
    const p = await newProject();
    // seq 2 and 4 expire first (debug, 1 day); then 3 (default, 30 days) joins them into one hole.
    await appendRows(p, K1, [
      {},
      { action: "debug.a", occurred_at: "2026-05-20T00:00:00.000Z" },
      { occurred_at: "2026-05-20T00:00:00.000Z" },
      { action: "debug.b", occurred_at: "2026-05-20T00:00:00.000Z" },
      {},
    ]);
    const ring = await loadKeyring(K1);
    plan(p, "debug.*", 1);
    plan(p, "*", 30);
    await purgeBatch(env.DB, ring, p, planOf(p), NOW);
    expect(await gaps(p)).toEqual([
      { first_seq: 2, last_seq: 2, purged_count: 1 },
      { first_seq: 4, last_seq: 4, purged_count: 1 },
    ]);
    plan(p, "*", 5);
    await purgeBatch(env.DB, ring, p, planOf(p), NOW);
    expect(await gaps(p)).toEqual([{ first_seq: 2, last_seq: 4, purged_count: 3 }]);
    expect(await verifyChain(env.DB, ring, p, { from: null, to: null }, fixtureAnchor(p), 1)).toMatchObject({ ok: true, verified: 2 });
  });

  it("does not merge a forged neighbour into a signed record, nor purge the row it would bridge", async () => {
    const p = await newProject();
    const rows = await appendRows(p, K1, [{}, {}, { occurred_at: OLD }, {}]);
    // An attacker deletes seq 2 and plants an unsigned gap for it.
    await env.DB.batch([
      env.DB.prepare("DELETE FROM events WHERE id = ?").bind(rows[1].id),
      env.DB.prepare(
        "INSERT INTO retention_gaps (project_id, before_hash, last_hash, first_seq, last_seq, purged_count, purged_at) VALUES (?, ?, ?, 2, 2, 1, ?)",
      ).bind(p, rows[0].hash, rows[1].hash, NOW.toISOString()),
    ]);
    plan(p, "*", 30);
    const ring = await loadKeyring(K1);
    // Seq 3 has no authentic predecessor left: it stays, for verify to report.
    expect(await purgeBatch(env.DB, ring, p, planOf(p), NOW)).toMatchObject({ purged: 0, refused: 1 });
    expect(await gaps(p)).toEqual([{ first_seq: 2, last_seq: 2, purged_count: 1 }]);
    expect((await verifyChain(env.DB, ring, p, { from: null, to: null }, fixtureAnchor(p))).failure).toMatchObject({
      event_id: rows[2].id,
      reason: "chain_broken",
    });
  });

  it("leaves a row whose content was edited, and purges its intact neighbours", async () => {
    const p = await newProject();
    const rows = await appendRows(p, K1, [{ occurred_at: OLD }, { occurred_at: OLD }, { occurred_at: OLD }, {}]);
    await env.DB.prepare("UPDATE events SET action = 'x.y' WHERE id = ?").bind(rows[1].id).run();
    plan(p, "*", 30);
    expect(await purgeBatch(env.DB, await loadKeyring(K1), p, planOf(p), NOW)).toMatchObject({ purged: 2, refused: 1 });
    expect((await env.DB.prepare("SELECT seq FROM events WHERE project_id = ? ORDER BY seq").bind(p).all()).results).toEqual([
      { seq: 2 },
      { seq: 4 },
    ]);
  });

  it("does nothing for a project without a plan", async () => {
    const p = await newProject();
    await appendRows(p, K1, [{ occurred_at: OLD }]);
    expect(await purgeBatch(env.DB, await loadKeyring(K1), p, planOf(p), NOW)).toMatchObject({ purged: 0, done: true });
  });
});

/**
 * env.DB, except that the retention purge runs (and commits) just before the
 * walk asks D1 for its page number `atPage`: the daily cron landing mid-verify.
 */
function purgeDuringWalk(projectId: string, ring: SigningKeyring, atPage: number): D1Database {
  let pages = 0;
  const db = env.DB;
  return interceptPrepare(db, (sql, statement) => {
    // Verify's pages (model/stand-ins.ts, checkedRowsSql): the only statement that names its rows' `unlisted`.
    if (!sql.includes("AS unlisted FROM page")) return statement;
    return {
      bind: (...params: unknown[]) => {
        const bound = statement.bind(...params);
        return {
          raw: async () => {
            if (++pages === atPage) await purgeBatch(db, ring, projectId, planOf(projectId), NOW);
            return bound.raw();
          },
        };
      },
    } as unknown as D1PreparedStatement;
  });
}

/** A project whose first four events (of `total`) are past its 30-day plan. */
async function fourExpired(total: number) {
  const p = await newProject();
  const rows = await appendRows(p, K1, Array.from({ length: total }, (_, i) => (i < 4 ? { occurred_at: OLD } : {})));
  plan(p, "*", 30);
  return { p, rows };
}

describe("verify while the retention purge runs", () => {
  it("walks again instead of reporting a purge that landed mid-walk as a broken chain", async () => {
    const { p, rows } = await fourExpired(6);
    const ring = await loadKeyring(K1);
    const head = fixtureAnchor(p);
    const all = { from: null, to: null };
    // Pages of 2: rows 1-2 are read, then seq 1-4 are purged into one gap before the next page
    // (now rows 5-6) is. The gap starts before row 2, where the walk stands: a broken link to it.
    const once = await verifyChain(purgeDuringWalk(p, ring, 2), ring, p, all, head, 2);
    expect(once.failure).toMatchObject({ event_id: rows[4].id, reason: "chain_broken" });

    const { p: q } = await fourExpired(6);
    const result = await verifyProject(purgeDuringWalk(q, ring, 2), ring, q, all, fixtureAnchor(q), 2);
    expect(result).toMatchObject({ ok: true, verified: 2, failure: null, gaps: [{ first_seq: 1, last_seq: 4, purged_count: 4 }] });
  });

  it("still reports a real break when a purge lands mid-walk", async () => {
    const { p, rows } = await fourExpired(7);
    // Someone deletes seq 6 without a gap record: a break no purge explains.
    await env.DB.prepare("DELETE FROM events WHERE id = ?").bind(rows[5].id).run();
    const ring = await loadKeyring(K1);
    const result = await verifyProject(purgeDuringWalk(p, ring, 2), ring, p, { from: null, to: null }, fixtureAnchor(p), 2);
    expect(result.failure).toMatchObject({ event_id: rows[6].id, reason: "chain_broken" });
  });
});
