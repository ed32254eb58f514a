import { checkRow } from "./chain-check";
import { gapIsAuthentic, signGap, type GapRecord, type UnsignedGap } from "./gap-records";
import { isHeld, type LegalHold } from "./legal-holds";
import { cutoffOf, mergeApplied, orderRules, ruleFor, type AppliedRule, type RetentionRule } from "./retention-rules";
import type { SigningKeyring } from "../sealing/signing-keys";
import { ArchiveDamagedError } from "../storage/archive-segments";
import type { ArchiveTier } from "../storage/archive-walk";
import type { ChainRow } from "../model/chain-row";
import { overArms, type Arm } from "../model/periods";
import { rowIdsOf } from "../model/row-keys";

/**
 * What a purge of hot rows (retention.ts) and a retirement or rewrite of an
 * archived segment (src/chain/retention-archive.ts) share: which rows may go
 * and the signed gap records that describe the holes they leave. Both tiers
 * go through here so every maximal purged hole keeps exactly one record (the
 * only thing verify's checkLink bridges), whichever tier its rows were in.
 */

/** What the ledger hands a purge from its own storage; nothing here comes from D1. */
export interface PurgePlan {
  rules: RetentionRule[];
  signedFrom: number;
  /** Active legal holds: their events are never purged, whatever the rules say. */
  holds?: LegalHold[];
}

export interface PurgeWrite {
  /** The rows that may go, in seq order. */
  rows: ChainRow[];
  /** Rows the plan expires (held ones excluded); those not in `rows` failed their checks and are left for verify. */
  expired: number;
  /** The gap records' part of the purge's D1 batch: merged neighbours deleted, one signed record per hole inserted. */
  statements: D1PreparedStatement[];
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
 * `candidates` in seq order: every one of them seeds the predecessor hashes
 * (a kept row of a segment links its successor without another read), and
 * those the plan expires are checked (hash, signature, link, and the plan
 * itself): a row someone edited, for example backdated so a rule would catch
 * it, is left in place for verify to report.
 */
export async function planPurge(
  db: D1Database,
  ring: SigningKeyring,
  projectId: string,
  plan: PurgePlan,
  now: Date,
  candidates: ChainRow[],
  archive?: ArchiveTier,
  arms?: Arm[],
): Promise<PurgeWrite> {
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
  const { rows, expired } = await checkedRows({ db, ring, projectId, plan, now, archive, arms }, candidates, byLast);

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
  const statements = [
    db.prepare("DELETE FROM retention_gaps WHERE id IN (SELECT value FROM json_each(?))").bind(JSON.stringify(merged)),
    db
      .prepare(
        "INSERT INTO retention_gaps (project_id, before_hash, last_hash, first_seq, last_seq, purged_count, purged_at, signature, rules) " +
          "SELECT ?1, value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7 FROM json_each(?2)",
      )
      .bind(projectId, JSON.stringify(records)),
  ];
  return { rows: rows.map((r) => r.row), expired, statements };
}

/** The rule that expires a row under the plan at `now`, or null: kept (no rule, not yet due, or held). */
export function expiryUnder(plan: PurgePlan, now: Date) {
  const ordered = orderRules(plan.rules);
  return (row: Pick<ChainRow, "action" | "occurred_at" | "organization" | "actor_id">): AppliedRule | null => {
    const rule = ruleFor(ordered, row.action);
    if (!rule || isHeld(plan.holds ?? [], row)) return null;
    const cutoff = cutoffOf(rule, now);
    return row.occurred_at < cutoff ? { pattern: rule.pattern, days: rule.days, cutoff } : null;
  };
}

/** The expired candidates that are intact and linked to what precedes them. */
async function checkedRows(
  at: { db: D1Database; ring: SigningKeyring; projectId: string; plan: PurgePlan; now: Date; archive?: ArchiveTier; arms?: Arm[] },
  candidates: ChainRow[],
  gapsByLast: Map<number, GapRecord>,
): Promise<{ rows: Array<{ row: ChainRow; rule: AppliedRule }>; expired: number }> {
  const { db, ring, projectId, plan, archive, arms } = at;
  const ruleOf = expiryUnder(plan, at.now);
  const expired = candidates.flatMap((row) => {
    const rule = ruleOf(row);
    return rule ? [{ row, rule }] : [];
  });
  const hashAt = new Map<number, string>(candidates.map((r) => [r.seq, r.hash]));
  const missing = expired.map((e) => e.row.seq - 1).filter((s) => s > 0 && !hashAt.has(s) && !gapsByLast.has(s));
  if (missing.length > 0) {
    // A predecessor may be in any arm, whichever holds the row after it.
    const found = await overArms(
      db,
      async (armed) =>
        (
          await armed
            .prepare(`SELECT seq, hash FROM events WHERE row_id IN (${rowIdsOf("?1", "?2")})`)
            .bind(projectId, JSON.stringify(missing))
            .all<{ seq: number; hash: string }>()
        ).results,
      arms,
    );
    for (const r of found.flat()) hashAt.set(r.seq, r.hash);
    // A predecessor still archived: the last row of the segment before a hot row or before the segment being retired.
    for (const s of missing) {
      // A damaged segment proves nothing: the row after it stays, for verify to report the damage.
      const cold = hashAt.has(s) ? null : await archive?.rowBefore(s + 1).catch(unlessDamaged);
      if (cold?.seq === s) hashAt.set(s, cold.hash);
    }
  }
  const out: Array<{ row: ChainRow; rule: AppliedRule }> = [];
  for (const { row, rule } of expired) {
    const pred = row.seq === 1 ? null : (hashAt.get(row.seq - 1) ?? gapsByLast.get(row.seq - 1)?.last_hash);
    if (pred === undefined || row.prev_hash !== pred) continue;
    const check = await checkRow(ring, row);
    const signed = check.signature === true || (check.signature === null && row.seq < plan.signedFrom);
    if (!check.hash || !signed) continue;
    out.push({ row, rule });
  }
  return { rows: out, expired: expired.length };
}

function unlessDamaged(error: unknown): null {
  if (error instanceof ArchiveDamagedError) return null;
  throw error;
}
