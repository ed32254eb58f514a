import { orderRules, ruleFor, SELF_AUDIT, type RetentionRule } from "./retention-rules";

/**
 * The retention lock's rule: once a plan is locked, a new plan may only keep
 * events longer. Every locked rule stays (raise its days instead of removing
 * it), and no action may be kept fewer days under the new plan than under the
 * locked one, whichever rule governs it (the most specific match; none: kept
 * forever). Comparing the rules pattern by pattern is not enough: adding
 * `debug.*: 1` to a locked `*: 365` shortens no rule, yet expires debug events
 * a year early. So the two plans are compared on one example action of every
 * class of actions they treat alike (witnessActions), which covers every
 * action there is.
 */

/** One way a proposed plan would expire events sooner than the locked one. */
export interface LockViolation {
  /** An action whose events would expire sooner (an example of its class). */
  action: string;
  /** The rule governing it now and under the proposal; null: kept forever. */
  locked_rule: RetentionRule | null;
  proposed_rule: RetentionRule | null;
}

export interface LockCheck {
  /** Locked patterns the proposal leaves out. */
  removed: string[];
  /** Distinct (locked rule, proposed rule) pairs that keep some action fewer days, at most MAX_REPORTED. */
  shortened: LockViolation[];
}

const MAX_REPORTED = 10;
/** Characters tried to step past a prefix: readable ones first. More than two plans' rules, so one always fits. */
const STEP = "xyz_0123456789abcdefghijklmnopqrstuvw-.:/ABCDEFGHIJKLMNOPQRSTUVWXYZ!#$%&+,;<=>?@^`|~";

/**
 * One action per class of actions that both plans govern alike. Under a set of
 * exact and prefix patterns, an action's rule in either plan depends only on
 * whether it equals an exact pattern and on the longest prefix pattern it
 * starts with. So: every exact pattern, every prefix itself, and, for each
 * prefix (and the empty one standing for `*`), the prefix plus one character
 * that starts no longer prefix and makes no exact pattern. `witness.` counts
 * as a prefix: the self-audit records are governed only by rules naming them.
 */
export function witnessActions(...plans: RetentionRule[][]): string[] {
  const patterns = plans.flat().map((r) => r.pattern);
  const exact = new Set(patterns.filter((p) => p !== "*" && !p.endsWith("*")));
  // The self-audit records form a class of their own (only rules naming them apply): a boundary like a prefix.
  const prefixes = [...new Set([...patterns.filter((p) => p.endsWith("*")).map((p) => p.slice(0, -1)), SELF_AUDIT])];
  const out = new Set<string>([...exact, ...prefixes.filter((p) => p !== "")]);
  for (const prefix of ["", ...prefixes]) {
    const taken = new Set(prefixes.filter((q) => q.length > prefix.length && q.startsWith(prefix)).map((q) => q[prefix.length]));
    const step = [...STEP].find((ch) => !taken.has(ch) && !exact.has(prefix + ch));
    if (step !== undefined) out.add(prefix + step);
  }
  return [...out];
}

const daysKept = (rule: RetentionRule | null) => rule?.days ?? Infinity;

/** What a proposal would break of a locked plan; both lists empty: it only keeps events longer. */
export function checkLockedChange(locked: RetentionRule[], proposed: RetentionRule[]): LockCheck {
  const kept = new Set(proposed.map((r) => r.pattern));
  const removed = locked.map((r) => r.pattern).filter((p) => !kept.has(p));
  const [before, after] = [orderRules(locked), orderRules(proposed)];
  const seen = new Set<string>();
  const shortened: LockViolation[] = [];
  for (const action of witnessActions(locked, proposed)) {
    const [was, will] = [ruleFor(before, action), ruleFor(after, action)];
    if (daysKept(will) >= daysKept(was)) continue;
    const pair = `${was?.pattern}\u0000${will?.pattern}`;
    if (seen.has(pair) || shortened.length >= MAX_REPORTED) continue;
    seen.add(pair);
    shortened.push({ action, locked_rule: was && { ...was }, proposed_rule: will && { ...will } });
  }
  return { removed, shortened };
}

/** A sentence for the 409's message: the first problem, plainly. */
export function describeLockCheck(check: LockCheck): string {
  if (check.removed.length > 0) return `the locked rule ${check.removed[0]} cannot be removed (raise its days instead)`;
  const v = check.shortened[0];
  if (!v) return "";
  const was = v.locked_rule ? `${v.locked_rule.days} days (rule ${v.locked_rule.pattern})` : "forever (no rule)";
  return `events like ${v.action} would be kept ${v.proposed_rule!.days} days (rule ${v.proposed_rule!.pattern}) instead of ${was}`;
}
