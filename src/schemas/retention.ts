import { z } from "zod";
import { MAX_DAYS, MAX_RULES, RULE_PATTERN } from "../chain/retention-rules";

export const retentionRuleSchema = z.object({
  pattern: z
    .string("pattern must be a string")
    .regex(RULE_PATTERN, "pattern is *, an exact action, or a prefix ending in * (like debug.*); * only at the end"),
  days: z.number("days must be a number").int("days must be a whole number").min(1, "days must be at least 1").max(MAX_DAYS, `days must be at most ${MAX_DAYS}`),
});

/** PUT /v1/retention: the whole plan, replacing the previous one; an empty list keeps every event forever. */
export const retentionPlanSchema = z
  .object({
    rules: z.array(retentionRuleSchema).max(MAX_RULES, `a plan has at most ${MAX_RULES} rules`),
    lock: z
      .boolean("lock must be true or false")
      .optional()
      .meta({ description: "true locks the plan for good: from then on it may only keep events longer. Omitted: the lock stays as it is." }),
  })
  .refine((plan) => new Set(plan.rules.map((r) => r.pattern)).size === plan.rules.length, {
    message: "each pattern may appear once",
    path: ["rules"],
  });

export const retentionStateSchema = z
  .object({
    data: z.object({
      rules: z.array(z.object({ pattern: z.string(), days: z.int() })).meta({ description: "In the order they apply: exact actions, longer prefixes, then *" }),
      locked: z.boolean().meta({ description: "Locked plans may only keep events longer; there is no unlock" }),
      locked_at: z.string().nullable(),
    }),
  })
  .meta({ id: "RetentionPlanResponse" });
