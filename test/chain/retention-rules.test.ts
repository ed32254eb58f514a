import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { checkLockedChange } from "../../src/chain/retention-lock";
import { cutoffSql, orderRules, ruleFor, type RetentionRule } from "../../src/chain/retention-rules";

const NOW = new Date("2026-11-25T00:00:00.000Z");

/** The cutoff D1 computes for an action under a plan (cutoffSql), null: kept forever. */
async function sqlCutoff(rules: RetentionRule[], action: string): Promise<string | null> {
  const { sql, params } = cutoffSql(rules, NOW);
  const row = await env.DB.prepare(`SELECT ${sql} AS cutoff FROM (SELECT ? AS action)`).bind(...params, action).first<{ cutoff: string | null }>();
  return row!.cutoff;
}

describe("retention rules and Witness's own records", () => {
  const plan: RetentionRule[] = [
    { pattern: "*", days: 1 },
    { pattern: "w*", days: 2 },
    { pattern: "witness.key.*", days: 400 },
  ];

  it("only a rule naming witness.* expires a self-audit record; the rest of the plan applies to everything else", async () => {
    const ordered = orderRules(plan);
    expect(ruleFor(ordered, "witness.retention.changed")).toBeNull();
    expect(ruleFor(ordered, "witness.key.created")).toEqual({ pattern: "witness.key.*", days: 400 });
    expect(ruleFor(ordered, "wiki.edited")).toEqual({ pattern: "w*", days: 2 });
    expect(ruleFor(ordered, "doc.read")).toEqual({ pattern: "*", days: 1 });
    // The purge's SQL agrees with ruleFor, action by action.
    for (const action of ["witness.retention.changed", "witness.key.created", "wiki.edited", "doc.read"]) {
      const rule = ruleFor(ordered, action);
      expect(await sqlCutoff(plan, action), action).toBe(rule === null ? null : new Date(NOW.getTime() - rule.days * 86_400_000).toISOString());
    }
  });

  it("a locked plan cannot start expiring the self-audit records", () => {
    const locked = [{ pattern: "*", days: 365 }];
    expect(checkLockedChange(locked, [...locked, { pattern: "witness.*", days: 36500 }]).shortened).toEqual([
      { action: "witness.", locked_rule: null, proposed_rule: { pattern: "witness.*", days: 36500 } },
    ]);
    expect(checkLockedChange(locked, [{ pattern: "*", days: 400 }])).toEqual({ removed: [], shortened: [] });
  });
});
