/**
 * A project's retention plan: days to keep events whose action matches a
 * pattern. The plan lives in the project's ledger (Durable Object storage);
 * D1's retention_rules is a copy the daily cron uses to find projects with a
 * plan, so a rule written into D1 alone purges nothing.
 */
export interface RetentionRule {
  pattern: string;
  days: number;
}

/** A rule as one purge applied it: the cutoff is what occurred_at had to be below. */
export interface AppliedRule extends RetentionRule {
  cutoff: string;
}

/** `*` (every action), an exact action, or a prefix ending in `*` such as `debug.*`. */
export const RULE_PATTERN = /^(\*|[^*]{1,255}|[^*]{1,254}\*)$/;
/** Each rule binds two values and D1 allows 100 per statement. */
export const MAX_RULES = 40;
export const MAX_DAYS = 36500;

/** Most specific rule first: exact actions, then longer prefixes, then `*`. */
export function orderRules(rules: RetentionRule[]): RetentionRule[] {
  const rank = (p: string) => (p === "*" ? -1 : p.endsWith("*") ? p.length : 1000);
  return [...rules].sort((a, b) => rank(b.pattern) - rank(a.pattern));
}

export function cutoffOf(rule: RetentionRule, now: Date): string {
  return new Date(now.getTime() - rule.days * 86_400_000).toISOString();
}

/**
 * Witness's own records of admin actions (src/chain/self-audit.ts): only a
 * rule that names them (`witness.*`, `witness.key.created`, ...) expires them.
 * A `*` plan must not quietly delete the record of who changed that plan.
 */
export const SELF_AUDIT = "witness.";
const namesSelfAudit = (rule: RetentionRule) => rule.pattern.startsWith(SELF_AUDIT);

/** The rule that governs an action (the most specific match), or null: kept forever. */
export function ruleFor(ordered: RetentionRule[], action: string): RetentionRule | null {
  const own = action.startsWith(SELF_AUDIT);
  for (const rule of ordered) {
    if (own && !namesSelfAudit(rule)) continue;
    if (rule.pattern === "*" || rule.pattern === action) return rule;
    if (rule.pattern.endsWith("*") && action.startsWith(rule.pattern.slice(0, -1))) return rule;
  }
  return null;
}

/** SQL that yields each row's expiry cutoff (NULL: kept forever) and its bound values. */
export function cutoffSql(rules: RetentionRule[], now: Date): { sql: string; params: string[] } {
  const whens: string[] = [];
  const params: string[] = [];
  let fallback: string | null = null;
  const ordered = orderRules(rules).slice(0, MAX_RULES);
  // Rules naming the self-audit records first (only they match them), then nothing else may.
  for (const rule of [...ordered.filter(namesSelfAudit), null, ...ordered.filter((r) => !namesSelfAudit(r))]) {
    if (rule === null) {
      whens.push(`WHEN substr(action, 1, ${SELF_AUDIT.length}) = '${SELF_AUDIT}' THEN NULL`);
    } else if (rule.pattern === "*") {
      fallback = cutoffOf(rule, now);
    } else if (rule.pattern.endsWith("*")) {
      const prefix = rule.pattern.slice(0, -1);
      whens.push(`WHEN substr(action, 1, ${prefix.length}) = ? THEN ?`);
      params.push(prefix, cutoffOf(rule, now));
    } else {
      whens.push("WHEN action = ? THEN ?");
      params.push(rule.pattern, cutoffOf(rule, now));
    }
  }
  if (fallback !== null) params.push(fallback);
  const orElse = fallback === null ? "NULL" : "?";
  return { sql: whens.length === 0 ? orElse : `CASE ${whens.join(" ")} ELSE ${orElse} END`, params };
}

/** Distinct applied rules, in a stable order, so a merged gap record lists each once. */
export function mergeApplied(...lists: AppliedRule[][]): AppliedRule[] {
  const byKey = new Map<string, AppliedRule>();
  for (const rule of lists.flat()) byKey.set(`${rule.pattern}\u0000${rule.days}\u0000${rule.cutoff}`, rule);
  return [...byKey.values()].sort((a, b) => (a.cutoff < b.cutoff ? -1 : a.cutoff > b.cutoff ? 1 : a.pattern < b.pattern ? -1 : 1));
}
