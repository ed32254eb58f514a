import { canonicalize } from "./canonical";
import { ledgerOf } from "./ledger";
import { checkSignature, sign, type SigningKeyring } from "./signing-keys";

/**
 * Retention: events older than their plan's days are purged by the project's
 * ledger, and every maximal hole the purges leave in the chain is described by
 * exactly one signed gap record, so verify can bridge it and nothing else.
 */
export interface GapRecord {
  id: number;
  project_id: string;
  before_hash: string | null;
  last_hash: string;
  first_seq: number;
  last_seq: number;
  purged_count: number;
  purged_at: string;
  signature: string | null;
}

export interface RetentionRule {
  pattern: string;
  days: number;
}

/** `*` (every action), an exact action, or a prefix ending in `*` such as `debug.*`. */
export const RULE_PATTERN = /^(\*|[^*]{1,255}|[^*]{1,254}\*)$/;
/** Each rule binds two values and D1 allows 100 per statement. */
export const MAX_RULES = 40;
export const PURGE_BATCH = 500;
/** Per project and cron run (500 x 400 = 200,000 events); the rest waits a day. */
const MAX_BATCHES_PER_RUN = 400;

export function gapPayload(g: Omit<GapRecord, "id" | "signature">): string {
  return canonicalize({
    before_hash: g.before_hash,
    first_seq: g.first_seq,
    last_hash: g.last_hash,
    last_seq: g.last_seq,
    project_id: g.project_id,
    purged_at: g.purged_at,
    purged_count: g.purged_count,
    type: "witness.retention_gap.v1",
  });
}

export function gapIsAuthentic(ring: SigningKeyring, gap: GapRecord): Promise<boolean> {
  return checkSignature(ring, gapPayload(gap), gap.signature);
}

/** Gap records ending in any of these hashes, grouped by last_hash. */
export async function gapsEndingAt(db: D1Database, projectId: string, hashes: string[]): Promise<Map<string, GapRecord[]>> {
  const out = new Map<string, GapRecord[]>();
  if (hashes.length === 0) return out;
  const { results } = await db
    .prepare("SELECT * FROM retention_gaps WHERE project_id = ? AND last_hash IN (SELECT value FROM json_each(?))")
    .bind(projectId, JSON.stringify([...new Set(hashes)]))
    .all<GapRecord>();
  for (const gap of results) out.set(gap.last_hash, [...(out.get(gap.last_hash) ?? []), gap]);
  return out;
}

/** Most specific rule first: exact actions, then longer prefixes, then `*`. */
export function orderRules(rules: RetentionRule[]): RetentionRule[] {
  const rank = (p: string) => (p === "*" ? -1 : p.endsWith("*") ? p.length : 1000);
  return [...rules].sort((a, b) => rank(b.pattern) - rank(a.pattern));
}

/** SQL that yields each row's expiry cutoff (NULL: kept forever) and its bound values. */
export function cutoffSql(rules: RetentionRule[], now: Date): { sql: string; params: string[] } {
  const cutoff = (days: number) => new Date(now.getTime() - days * 86_400_000).toISOString();
  const whens: string[] = [];
  const params: string[] = [];
  let fallback: string | null = null;
  for (const rule of orderRules(rules).slice(0, MAX_RULES)) {
    if (rule.pattern === "*") {
      fallback = cutoff(rule.days);
    } else if (rule.pattern.endsWith("*")) {
      const prefix = rule.pattern.slice(0, -1);
      whens.push(`WHEN substr(action, 1, ${prefix.length}) = ? THEN ?`);
      params.push(prefix, cutoff(rule.days));
    } else {
      whens.push("WHEN action = ? THEN ?");
      params.push(rule.pattern, cutoff(rule.days));
    }
  }
  if (fallback !== null) params.push(fallback);
  const orElse = fallback === null ? "NULL" : "?";
  return { sql: whens.length === 0 ? orElse : `CASE ${whens.join(" ")} ELSE ${orElse} END`, params };
}

interface Run {
  first_seq: number;
  last_seq: number;
  before_hash: string | null;
  last_hash: string;
  purged_count: number;
}

/**
 * Deletes up to PURGE_BATCH expired events (chain order) and rewrites the gap
 * records around them in the same D1 transaction. Call it only from the
 * project's ledger, so it never interleaves with an append.
 */
export async function purgeBatch(db: D1Database, ring: SigningKeyring, projectId: string, now: Date, afterSeq = 0) {
  const { results: rules } = await db
    .prepare("SELECT pattern, days FROM retention_rules WHERE project_id = ?")
    .bind(projectId)
    .all<RetentionRule>();
  if (rules.length === 0) return { purged: 0, done: true, lastSeq: afterSeq };
  const cut = cutoffSql(rules, now);
  const { results: rows } = await db
    .prepare(
      `SELECT seq, hash, prev_hash FROM events WHERE project_id = ? AND seq > ? AND occurred_at < (${cut.sql}) ORDER BY seq LIMIT ${PURGE_BATCH}`,
    )
    .bind(projectId, afterSeq, ...cut.params)
    .all<{ seq: number; hash: string; prev_hash: string | null }>();
  if (rows.length === 0) return { purged: 0, done: true, lastSeq: afterSeq };

  const first = rows[0].seq;
  const last = rows[rows.length - 1].seq;
  const { results: near } = await db
    .prepare(
      "SELECT * FROM retention_gaps WHERE project_id = ?1 AND last_seq BETWEEN ?2 AND ?3 " +
        "UNION ALL SELECT * FROM retention_gaps WHERE project_id = ?1 AND first_seq = ?4",
    )
    .bind(projectId, first - 1, last, last + 1)
    .all<GapRecord>();
  // A forged neighbour is left alone: merging would launder it into a signed record.
  const authentic = (await Promise.all(near.map((g) => gapIsAuthentic(ring, g)))).map((ok, i) => (ok ? near[i] : null));
  const byFirst = new Map(authentic.flatMap((g) => (g ? [[g.first_seq, g] as const] : [])));
  const byLast = new Map(authentic.flatMap((g) => (g ? [[g.last_seq, g] as const] : [])));

  const merged: number[] = [];
  const absorb = (g: GapRecord) => {
    merged.push(g.id);
    return g.purged_count;
  };
  const runs: Run[] = [];
  for (const row of rows) {
    const run = runs[runs.length - 1];
    const between = run ? byFirst.get(run.last_seq + 1) : undefined;
    if (run && (row.seq === run.last_seq + 1 || between?.last_seq === row.seq - 1)) {
      if (row.seq !== run.last_seq + 1) run.purged_count += absorb(between!);
      Object.assign(run, { last_seq: row.seq, last_hash: row.hash, purged_count: run.purged_count + 1 });
      continue;
    }
    const before = byLast.get(row.seq - 1);
    runs.push({
      first_seq: before ? before.first_seq : row.seq,
      before_hash: before ? before.before_hash : row.prev_hash,
      last_seq: row.seq,
      last_hash: row.hash,
      purged_count: 1 + (before ? absorb(before) : 0),
    });
  }
  for (const run of runs) {
    const after = byFirst.get(run.last_seq + 1);
    if (after) Object.assign(run, { last_seq: after.last_seq, last_hash: after.last_hash, purged_count: run.purged_count + absorb(after) });
  }

  const purgedAt = now.toISOString();
  const records = await Promise.all(
    runs.map(async (run) => {
      const gap = { project_id: projectId, ...run, purged_at: purgedAt };
      return [gap.before_hash, gap.last_hash, gap.first_seq, gap.last_seq, gap.purged_count, purgedAt, await sign(ring, gapPayload(gap))];
    }),
  );
  await db.batch([
    db.prepare("DELETE FROM retention_gaps WHERE id IN (SELECT value FROM json_each(?))").bind(JSON.stringify(merged)),
    db
      .prepare(
        "INSERT INTO retention_gaps (project_id, before_hash, last_hash, first_seq, last_seq, purged_count, purged_at, signature) " +
          "SELECT ?1, value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6 FROM json_each(?2)",
      )
      .bind(projectId, JSON.stringify(records)),
    db
      .prepare("DELETE FROM events WHERE project_id = ? AND seq IN (SELECT value FROM json_each(?))")
      .bind(projectId, JSON.stringify(rows.map((r) => r.seq))),
  ]);
  return { purged: rows.length, done: rows.length < PURGE_BATCH, lastSeq: last };
}

/** The daily cron: every project with a plan, in bounded batches through its ledger. */
export async function purgeExpiredEvents(env: Env, now: Date): Promise<void> {
  const { results } = await env.DB.prepare("SELECT DISTINCT project_id FROM retention_rules").all<{ project_id: string }>();
  for (const { project_id } of results) {
    try {
      const ledger = ledgerOf(env, project_id);
      // Each batch resumes after the last one, so a run reads the chain once.
      let afterSeq = 0;
      for (let i = 0; i < MAX_BATCHES_PER_RUN; i++) {
        const batch = await ledger.purgeExpired(now.toISOString(), afterSeq);
        if (batch.done) break;
        afterSeq = batch.lastSeq;
      }
    } catch (error) {
      // One project's trouble must not keep the others from their purge.
      console.error(`retention purge of project ${project_id} failed`, error);
    }
  }
}
