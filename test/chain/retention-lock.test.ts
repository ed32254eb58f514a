import { describe, expect, it } from "vitest";
import { checkLockedChange, describeLockCheck, witnessActions } from "../../src/chain/retention-lock";
import { orderRules, ruleFor, type RetentionRule } from "../../src/chain/retention-rules";

const ok = { removed: [], shortened: [] };
const r = (pattern: string, days: number): RetentionRule => ({ pattern, days });

describe("checkLockedChange: a locked plan may only keep events longer", () => {
  const locked = [r("*", 365), r("debug.*", 30), r("login.failed", 90)];

  it("accepts the same plan, longer days, and rules that only lengthen", () => {
    expect(checkLockedChange(locked, locked)).toEqual(ok);
    expect(checkLockedChange(locked, [r("*", 400), r("debug.*", 31), r("login.failed", 90)])).toEqual(ok);
    // More specific, but longer than what governs those actions now.
    expect(checkLockedChange(locked, [...locked, r("debug.trace.*", 60), r("billing.paid", 3650)])).toEqual(ok);
  });

  it("refuses a shorter rule", () => {
    const check = checkLockedChange(locked, [r("*", 1), r("debug.*", 30), r("login.failed", 90)]);
    expect(check.removed).toEqual([]);
    expect(check.shortened[0]).toMatchObject({ locked_rule: r("*", 365), proposed_rule: r("*", 1) });
    expect(ruleFor(orderRules(locked), check.shortened[0].action)?.pattern).toBe("*");
  });

  it("refuses removing a rule, even one whose removal keeps events longer", () => {
    expect(checkLockedChange(locked, [r("*", 365), r("debug.*", 30)]).removed).toEqual(["login.failed"]);
    expect(checkLockedChange([r("debug.*", 30)], []).removed).toEqual(["debug.*"]);
  });

  it("refuses a new, more specific rule that expires some actions sooner, though no rule got shorter", () => {
    const check = checkLockedChange(locked, [...locked, r("audit.*", 7)]);
    expect(check.removed).toEqual([]);
    expect(check.shortened).toEqual([{ action: "audit.", locked_rule: r("*", 365), proposed_rule: r("audit.*", 7) }]);
    expect(describeLockCheck(check)).toBe("events like audit. would be kept 7 days (rule audit.*) instead of 365 days (rule *)");
    // An exact action under a prefix.
    expect(checkLockedChange(locked, [...locked, r("debug.keep", 29)]).shortened).toMatchObject([{ action: "debug.keep", locked_rule: r("debug.*", 30) }]);
  });

  it("refuses a broader rule over actions kept forever", () => {
    const plan = [r("debug.*", 7)];
    const check = checkLockedChange(plan, [r("debug.*", 7), r("*", 3650)]);
    expect(check.shortened).toEqual([{ action: "x", locked_rule: null, proposed_rule: r("*", 3650) }]);
    expect(describeLockCheck(check)).toMatch(/instead of forever \(no rule\)/);
    // A locked empty plan keeps everything forever: any rule shortens something.
    expect(checkLockedChange([], [r("a.b", 36500)]).shortened).toHaveLength(1);
  });

  it("finds the action between a prefix and its longer prefixes", () => {
    // a.* 10 days under lock; the proposal raises a.* but adds a.x* and a.y* shorter: a.x and a.y and a.xq... all shortened.
    const check = checkLockedChange([r("a.*", 10), r("a.z*", 20)], [r("a.*", 100), r("a.z*", 20), r("a.x*", 5), r("a.y*", 5)]);
    expect(check.shortened.map((v) => v.proposed_rule?.pattern).sort()).toEqual(["a.x*", "a.y*"]);
  });
});

describe("witnessActions", () => {
  it("has one action per class, so every action is judged as its witness is", () => {
    const a = [r("*", 5), r("a.*", 10), r("a.b", 3), r("a.bc*", 4)];
    const b = [r("a.b*", 8), r("x", 1)];
    const witnesses = witnessActions(a, b);
    // Every action of a sample falls in the class of some witness governed alike under both plans.
    const [oa, ob] = [orderRules(a), orderRules(b)];
    const sig = (action: string) => `${ruleFor(oa, action)?.pattern}|${ruleFor(ob, action)?.pattern}`;
    const classes = new Set(witnesses.map(sig));
    for (const action of ["", "a", "a.", "a.b", "a.bc", "a.bcd", "a.bd", "a.b.x", "a.c", "x", "xy", "b", "zz", "a.bc*"]) {
      expect(classes, action).toContain(sig(action));
    }
  });
});
