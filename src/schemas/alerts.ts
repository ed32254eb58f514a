import { z } from "zod";
import { emailAddressProblem } from "../alerts/email";
import { CHANNEL_TYPES, GROUP_BY, MAX_CHANNELS, MAX_EMAIL_RECIPIENTS, MAX_WINDOW_SECONDS, patternProblem, RULE_KINDS } from "../alerts/rules";

const pattern = z.string().superRefine((p, ctx) => {
  const problem = patternProblem(p);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

export const matchSchema = z
  .strictObject({
    actions: z.array(pattern).min(1).max(20).optional().meta({ description: "Actions, or prefixes ending in `*` (`auth.login.*`); absent: every action" }),
    organization: z.string().min(1).max(128).optional(),
    actor_id: z.string().min(1).max(255).optional(),
    actor_type: z.string().min(1).max(64).optional(),
    target_type: z.string().min(1).max(64).optional(),
    metadata: z
      .record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
      .refine((m) => Object.keys(m).length <= 4, "at most 4 metadata fields")
      .optional()
      .meta({ description: "Declared filterable metadata fields (the action catalog) and the value each must hold" }),
  })
  .meta({ id: "AlertMatch" });

export const thresholdSchema = z
  .strictObject({
    count: z.int().min(1).max(10_000),
    window_seconds: z.int().min(1).max(MAX_WINDOW_SECONDS, `window_seconds must be at most ${MAX_WINDOW_SECONDS} (24 h)`),
    group_by: z.enum(GROUP_BY).optional(),
  })
  .meta({ id: "AlertThreshold", description: "Fire when count matching events are committed within window_seconds (per group)" });

const emailAddress = z.string().superRefine((a, ctx) => {
  const problem = emailAddressProblem(a);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

export const channelInputSchema = z
  .strictObject({
    type: z.enum(CHANNEL_TYPES, `type must be one of ${CHANNEL_TYPES.join(", ")}`),
    url: z.string().max(2048).optional().meta({ description: "webhook, slack (incoming webhook), teams (workflow webhook); pagerduty: the Events API v2 URL (default https://events.pagerduty.com/v2/enqueue)" }),
    routing_key: z.string().optional().meta({ description: "pagerduty: the integration's 32-character routing key (sealed, never shown again)" }),
    severity: z.enum(["critical", "error", "warning", "info"]).optional().meta({ description: "pagerduty: the incident's severity (default warning)" }),
    to: z
      .array(emailAddress)
      .min(1, "to needs at least one address")
      .max(MAX_EMAIL_RECIPIENTS, `to holds at most ${MAX_EMAIL_RECIPIENTS} addresses`)
      .optional()
      .meta({
        description:
          `email: 1 to ${MAX_EMAIL_RECIPIENTS} recipients of one plain-text message per firing, sent through the deployment's send_email binding (Cloudflare Email Service); ` +
          "a deployment without one refuses e-mail channels",
      }),
  })
  .superRefine((ch, ctx) => {
    if (ch.type === "email") {
      if (ch.to === undefined) ctx.addIssue({ code: "custom", path: ["to"], message: "an e-mail channel needs to: its recipients' addresses" });
      for (const field of ["url", "routing_key", "severity"] as const) {
        if (ch[field] !== undefined) ctx.addIssue({ code: "custom", path: [field], message: `${field} does not apply to an e-mail channel` });
      }
    } else if (ch.to !== undefined) {
      ctx.addIssue({ code: "custom", path: ["to"], message: "to applies to e-mail channels only" });
    }
  })
  .meta({ id: "AlertChannelInput" });

const ruleFields = {
  name: z.string().min(1).max(100),
  match: matchSchema,
  threshold: thresholdSchema.nullable(),
  channels: z.array(channelInputSchema).max(MAX_CHANNELS, `at most ${MAX_CHANNELS} channels`),
  cooldown_seconds: z.int().min(0).max(MAX_WINDOW_SECONDS).meta({ description: "After a firing, the rule (per group) stays quiet this long" }),
  enabled: z.boolean(),
};

export const createAlertSchema = z
  .strictObject({
    ...ruleFields,
    kind: z.enum(RULE_KINDS).default("events").meta({
      description: "events: matches events. integrity: the trail itself in danger (a verify that fails, a stream failing or disabled, a key expiring within 7 days); match and threshold do not apply",
    }),
    match: matchSchema.default({}),
    threshold: ruleFields.threshold.optional(),
    anomaly: z
      .strictObject({ min_count: z.int().min(1).max(1_000_000).optional(), sensitivity: z.number().min(1).max(20).optional() })
      .nullable()
      .optional()
      .meta({ description: "kind anomaly: fire when this hour's count of the actions reaches max(min_count, mean + sensitivity * max(sd, sqrt(mean), 1)) of the same hour over the last 7 days (defaults 20 and 4)" }),
    cooldown_seconds: ruleFields.cooldown_seconds.default(0),
    enabled: ruleFields.enabled.default(true),
  })
  .meta({ id: "AlertRuleInput" });

export const patchAlertSchema = z.strictObject({
  name: ruleFields.name.optional(),
  match: matchSchema.optional(),
  threshold: ruleFields.threshold.optional(),
  channels: ruleFields.channels.optional(),
  cooldown_seconds: ruleFields.cooldown_seconds.optional(),
  enabled: ruleFields.enabled.optional(),
  anomaly: z.strictObject({ min_count: z.int().min(1).max(1_000_000).optional(), sensitivity: z.number().min(1).max(20).optional() }).nullable().optional(),
}).meta({ id: "AlertRulePatch" });

export const alertIdParam = z.object({ id: z.string().regex(/^al_[0-9a-f]{20}$/, "not an alert rule id") });

const channelView = z.object({
  type: z.enum(CHANNEL_TYPES),
  url: z.string().meta({ description: "Slack and Teams: only the origin (the URL is the secret); email: a mailto: URI of its recipients" }),
  to: z.array(z.string()).optional().meta({ description: "email: the recipients" }),
  severity: z.string().optional(),
  status: z.enum(["pending", "ok", "failing"]).meta({ description: "failing: its last delivery failed (see last_error); it is retried with backoff" }),
  last_success_at: z.string().nullable(),
  last_error: z.string().nullable(),
  last_error_at: z.string().nullable(),
  secret: z.string().optional().meta({ description: "A webhook channel's signing secret (Standard Webhooks), in the answer that created it only" }),
});

export const alertRuleSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    kind: z.enum(RULE_KINDS),
    match: matchSchema,
    threshold: thresholdSchema.nullable(),
    anomaly: z.object({ min_count: z.int().optional(), sensitivity: z.number().optional() }).nullable().optional(),
    cooldown_seconds: z.int(),
    enabled: z.boolean(),
    channels: z.array(channelView),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: "AlertRule" });

export const alertRuleResponse = z.object({ data: alertRuleSchema });
export const alertRuleList = z.object({ data: z.array(alertRuleSchema) });

const firedEvent = z.object({
  id: z.string(),
  seq: z.int(),
  action: z.string(),
  display: z.string().nullable(),
  occurred_at: z.string(),
  organization: z.string().nullable(),
  url: z.string().meta({ description: "The event in the console" }),
});

export const firingSchema = z
  .object({
    id: z.int(),
    rule_id: z.string(),
    rule_name: z.string(),
    project_id: z.string(),
    fired_at: z.string(),
    reason: z.string(),
    group: z.string().nullable(),
    count: z.int().meta({ description: "Matching events behind this firing (events lists the first 20)" }),
    events: z.array(firedEvent),
    test: z.boolean(),
    deliveries: z.array(
      z.object({
        channel: z.int(),
        status: z.enum(["pending", "retrying", "delivered", "failed", "dropped"]),
        attempts: z.int(),
        last_error: z.string().nullable(),
        delivered_at: z.string().nullable(),
        next_attempt_at: z.string().nullable(),
      }),
    ),
  })
  .meta({ id: "AlertFiring" });

export const firingResponse = z.object({ data: firingSchema });
export const firingPage = z.object({ data: z.array(firingSchema), nextCursor: z.string().nullable() }).meta({ id: "AlertFiringPage" });
export const firingQuery = z.object({
  cursor: z.string().regex(/^\d+$/, "cursor must be a nextCursor of an earlier page").optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});
