import { CHAIN_COLUMNS, chainRowOf, checkRow, type ChainRow } from "./chain-check";
import { gapIsAuthentic, signGap, type GapRecord, type UnsignedGap } from "./gap-records";
import { heldSql, isHeld, type LegalHold } from "./legal-holds";
import { ledgerOf } from "./ledger";
import { cutoffOf, cutoffSql, mergeApplied, orderRules, ruleFor, type AppliedRule, type RetentionRule } from "./retention-rules";
import { loadKeyring, type SigningKeyring } from "./signing-keys";
import { restoreExpired } from "../storage/archive-retention";
import { archiveTier, type ArchiveTier } from "../storage/archive-walk";

export const PURGE_BATCH = 500;

/** What the ledger hands a purge from its own storage; nothing here comes from D1. */
export interface PurgePlan {
  rules: RetentionRule[];
  signedFrom: number;
  /** Active legal holds: their events are never purged, whatever the rules say. */
  holds?: LegalHold[];
}

interface Run {
  first_seq: number;
  last_seq: number;
  before_hash: string | null;
  last_hash: string;
  purged_count: number;
  rules: AppliedRule[];
}

const parseRules = (g: GapRecord): AppliedRule[] => (g.rules ? (JSON.parse(g.rules) as AppliedRule[]) : []);

/**
 * One bounded retention step of a project's ledger (under its commit lock): a
 * batch of hot rows; once none is left, the next archived segment holding
 * expired events is brought back hot and the purge starts over from seq 0.
 */
export async function purgeStep(env: Env, db: D1Database, projectId: string, plan: PurgePlan, now: Date, afterSeq: number, kv: SyncKvStorage) {
  const ring = await loadKeyring(env.SIGNING_KEYS);
  const batch = await purgeBatch(db, ring, projectId, plan, now, afterSeq, archiveTier(env, db, projectId));
  if (!batch.done) return batch;
  const cold = await restoreExpired(env, db, projectId, plan.rules, now, kv, plan.holds);
  return cold.more ? { ...batch, done: false, lastSeq: 0 } : batch;
}

/**
 * Deletes up to PURGE_BATCH expired events (chain order) and rewrites the gap
 * records around them in the same D1 transaction. Each row is checked first
 * (hash, signature, link, and that the ledger's own plan expires it): a row
 * someone edited, for example backdated so a rule would catch it, is left in
 * place for verify to report. Call it only from the project's ledger.
 */
export async function purgeBatch(db: D1Database, ring: SigningKeyring, projectId: string, plan: PurgePlan, now: Date, afterSeq = 0, archive?: ArchiveTier) {
  const none = { purged: 0, refused: 0, done: true, lastSeq: afterSeq };
  if (plan.rules.length === 0) return none;
  const cut = cutoffSql(plan.rules, now);
  // A held event is no candidate: the run around it ends before it and a new one starts after it, one gap record each.
  const held = heldSql(plan.holds ?? []);
  const candidates = (
    await db
      .prepare(
        `SELECT ${CHAIN_COLUMNS} FROM events WHERE project_id = ? AND seq > ? AND occurred_at < (${cut.sql}) AND NOT ${held.sql} ORDER BY seq LIMIT ${PURGE_BATCH}`,
      )
      .bind(projectId, afterSeq, ...cut.params, ...held.params)
      .raw()
  ).map(chainRowOf);
  if (candidates.length === 0) return none;

  const first = candidates[0].seq;
  const last = candidates[candidates.length - 1].seq;
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
  const rows = await checkedRows(db, ring, projectId, plan, now, candidates, byLast, archive);

  const merged: number[] = [];
  const absorb = (g: GapRecord, run: Run) => {
    merged.push(g.id);
    run.rules = mergeApplied(run.rules, parseRules(g));
    return g.purged_count;
  };
  const runs: Run[] = [];
  for (const { row, rule } of rows) {
    const run = runs[runs.length - 1];
    const between = run ? byFirst.get(run.last_seq + 1) : undefined;
    if (run && (row.seq === run.last_seq + 1 || between?.last_seq === row.seq - 1)) {
      if (row.seq !== run.last_seq + 1) run.purged_count += absorb(between!, run);
      Object.assign(run, { last_seq: row.seq, last_hash: row.hash, purged_count: run.purged_count + 1 });
      run.rules = mergeApplied(run.rules, [rule]);
      continue;
    }
    const before = byLast.get(row.seq - 1);
    const fresh: Run = { first_seq: row.seq, before_hash: row.prev_hash, last_seq: row.seq, last_hash: row.hash, purged_count: 1, rules: [rule] };
    if (before) Object.assign(fresh, { first_seq: before.first_seq, before_hash: before.before_hash, purged_count: 1 + absorb(before, fresh) });
    runs.push(fresh);
  }
  for (const run of runs) {
    const after = byFirst.get(run.last_seq + 1);
    if (after) Object.assign(run, { last_seq: after.last_seq, last_hash: after.last_hash, purged_count: run.purged_count + absorb(after, run) });
  }

  const purgedAt = now.toISOString();
  const records = await Promise.all(
    runs.map(async (run) => {
      const gap: UnsignedGap = { project_id: projectId, ...run, rules: JSON.stringify(run.rules), purged_at: purgedAt };
      return [gap.before_hash, gap.last_hash, gap.first_seq, gap.last_seq, gap.purged_count, purgedAt, await signGap(ring, gap), gap.rules];
    }),
  );
  if (rows.length > 0) {
    await db.batch([
      db.prepare("DELETE FROM retention_gaps WHERE id IN (SELECT value FROM json_each(?))").bind(JSON.stringify(merged)),
      db
        .prepare(
          "INSERT INTO retention_gaps (project_id, before_hash, last_hash, first_seq, last_seq, purged_count, purged_at, signature, rules) " +
            "SELECT ?1, value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7 FROM json_each(?2)",
        )
        .bind(projectId, JSON.stringify(records)),
      db
        .prepare("DELETE FROM events WHERE project_id = ? AND seq IN (SELECT value FROM json_each(?))")
        .bind(projectId, JSON.stringify(rows.map((r) => r.row.seq))),
    ]);
  }
  const refused = candidates.length - rows.length;
  if (refused > 0) console.warn(`retention ${projectId}: left ${refused} row(s) that failed their checks for verify to report`);
  return { purged: rows.length, refused, done: candidates.length < PURGE_BATCH, lastSeq: last };
}

/** The candidates that are intact, linked to what precedes them, and expired under the ledger's plan. */
async function checkedRows(
  db: D1Database,
  ring: SigningKeyring,
  projectId: string,
  plan: PurgePlan,
  now: Date,
  candidates: ChainRow[],
  gapsByLast: Map<number, GapRecord>,
  archive?: ArchiveTier,
): Promise<Array<{ row: ChainRow; rule: AppliedRule }>> {
  const ordered = orderRules(plan.rules);
  const hashAt = new Map<number, string>(candidates.map((r) => [r.seq, r.hash]));
  const missing = candidates.map((r) => r.seq - 1).filter((s) => s > 0 && !hashAt.has(s) && !gapsByLast.has(s));
  if (missing.length > 0) {
    const { results } = await db
      .prepare("SELECT seq, hash FROM events WHERE project_id = ? AND seq IN (SELECT value FROM json_each(?))")
      .bind(projectId, JSON.stringify(missing))
      .all<{ seq: number; hash: string }>();
    for (const r of results) hashAt.set(r.seq, r.hash);
    // A predecessor still archived (a restored segment's first row: src/storage/archive-retention.ts).
    for (const s of missing) {
      const cold = hashAt.has(s) ? null : await archive?.rowBefore(s + 1);
      if (cold?.seq === s) hashAt.set(s, cold.hash);
    }
  }
  const out: Array<{ row: ChainRow; rule: AppliedRule }> = [];
  for (const row of candidates) {
    const rule = ruleFor(ordered, row.action);
    if (!rule || isHeld(plan.holds ?? [], row)) continue;
    const cutoff = cutoffOf(rule, now);
    if (!(row.occurred_at < cutoff)) continue;
    const pred = row.seq === 1 ? null : (hashAt.get(row.seq - 1) ?? gapsByLast.get(row.seq - 1)?.last_hash);
    if (pred === undefined || row.prev_hash !== pred) continue;
    const check = await checkRow(ring, row);
    const signed = check.signature === true || (check.signature === null && row.seq < plan.signedFrom);
    if (!check.hash || !signed) continue;
    out.push({ row, rule: { pattern: rule.pattern, days: rule.days, cutoff } });
  }
  return out;
}

/** The daily cron: every project with a plan, in bounded batches through its ledger. */
export async function purgeExpiredEvents(env: Env, now: Date): Promise<void> {
  // D1's copy only says which ledgers to wake; each purges by the plan in its own storage, the
  // first steps in this call and the rest from its own alarm (src/chain/retention-upkeep.ts).
  const { results } = await env.DB.prepare("SELECT DISTINCT project_id FROM retention_rules").all<{ project_id: string }>();
  for (const { project_id } of results) {
    try {
      await ledgerOf(env, project_id).purgeNow(now.toISOString());
    } catch (error) {
      // One project's trouble must not keep the others from their purge.
      console.error(`retention purge of project ${project_id} failed`, error);
    }
  }
}
