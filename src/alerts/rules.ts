/**
 * src/alerts/: alert rules on a project's events (issue 36). A rule matches
 * events (rules.ts, this file: where to start), an evaluator per project reads
 * every event once in seq order from a cursor and records firings and their
 * deliveries in one storage step (engine.ts, hosted by
 * src/durable/alert-evaluator.do.ts), and channels carry them out: a signed
 * webhook, Slack, Microsoft Teams, PagerDuty Events v2 (channels.ts), e-mail
 * through the deployment's send_email binding (email.ts). The
 * ledger only wakes the evaluator after a commit (wake.ts); evaluation never
 * runs inside the commit.
 */
import type { ShapeRow } from "../model/event-shape";
import { metadataMatches } from "../model/event-query";
import { actionMatches } from "../streams/store";

export const MAX_RULES = 100;
export const MAX_CHANNELS = 5;
export const MAX_WINDOW_SECONDS = 86_400;
export const CHANNEL_TYPES = ["webhook", "slack", "teams", "pagerduty", "email"] as const;
/** Recipients of one e-mail channel: one message to all of them (Email Service takes at most 50). */
export const MAX_EMAIL_RECIPIENTS = 10;
export type ChannelType = (typeof CHANNEL_TYPES)[number];
export const GROUP_BY = ["actor_id", "organization", "ip_address"] as const;

export interface Match {
  /** Exact actions, or prefixes ending in `*`; absent: every action. */
  actions?: string[];
  organization?: string;
  actor_id?: string;
  actor_type?: string;
  target_type?: string;
  /** Declared filterable metadata fields (the catalog) and the values they must hold. */
  metadata?: Record<string, string | number | boolean>;
}

export interface Threshold {
  count: number;
  window_seconds: number;
  group_by?: (typeof GROUP_BY)[number];
}

/** A channel as stored: its secret (webhook signing secret, Slack or Teams URL, PagerDuty routing key) sealed. */
export interface StoredChannel {
  type: ChannelType;
  /** Where it posts; for Slack and Teams the URL is the secret, so only its origin is shown. E-mail: a mailto: URI of its recipients. */
  url: string;
  /** E-mail: "" (addresses are not a credential: they are shown back, like a webhook's URL). */
  sealed: string;
  /** E-mail: the recipients. */
  to?: string[];
  severity?: "critical" | "error" | "warning" | "info";
}

/** What a notification says of an event. */
export interface FiredEvent {
  id: string;
  seq: number;
  action: string;
  display: string | null;
  occurred_at: string;
  organization: string | null;
  url: string;
}

export interface Firing {
  id: number;
  rule_id: string;
  rule_name: string;
  project_id: string;
  fired_at: string;
  /** Why, in one sentence: "3 matching events within 300 s for actor_id u_1". */
  reason: string;
  group: string | null;
  count: number;
  events: FiredEvent[];
  test: boolean;
}

export const RULE_KINDS = ["events", "integrity", "anomaly"] as const;

export interface Rule {
  id: string;
  name: string;
  /** events: matches events (match, threshold); integrity: the trail itself in danger (src/alerts/integrity.ts). Absent on none: made with it. */
  kind: (typeof RULE_KINDS)[number];
  match: Match;
  threshold: Threshold | null;
  /** kind anomaly: how far above the usual level an hour must be (src/alerts/anomaly.ts); absent: the defaults. */
  anomaly?: { min_count?: number; sensitivity?: number } | null;
  cooldown_seconds: number;
  enabled: boolean;
  channels: StoredChannel[];
  /** The console the creating request came through: where a notification links its events. */
  console_origin: string;
  created_at: string;
  updated_at: string;
}

/** Whether the event is one the rule is about. Metadata is parsed only when the rule tests it. */
export function ruleMatches(match: Match, row: ShapeRow): boolean {
  if (match.actions && !actionMatches(match.actions, row.action)) return false;
  if (match.organization !== undefined && row.organization !== match.organization) return false;
  if (match.actor_id !== undefined && row.actor_id !== match.actor_id) return false;
  if (match.actor_type !== undefined && row.actor_type !== match.actor_type) return false;
  if (match.target_type !== undefined && !(JSON.parse(row.targets) as Array<{ type: string }>).some((t) => t.type === match.target_type)) return false;
  const metadata = Object.entries(match.metadata ?? {}).map(([key, value]) => ({ key, value }));
  return metadata.length === 0 || metadataMatches(row.metadata, metadata);
}

/** The group a thresholded event counts in ("" when the rule does not group, or the event lacks the field). */
export function groupOf(threshold: Threshold | null, row: ShapeRow): string {
  return threshold?.group_by ? (row[threshold.group_by] ?? "") : "";
}

/** A pattern is an action, or a prefix with one trailing `*`: nothing else, so every rule reads the same to everyone. */
export function patternProblem(pattern: string): string | null {
  if (pattern.length === 0 || pattern.length > 255) return "must be 1 to 255 characters";
  const star = pattern.indexOf("*");
  if (star !== -1 && star !== pattern.length - 1) return "may hold `*` only at its end (a prefix)";
  return null;
}

/** What GET shows of a channel: never its secret. */
export function channelView(c: StoredChannel, state: ChannelState | undefined) {
  return {
    type: c.type,
    url: c.url,
    ...(c.to ? { to: c.to } : {}),
    ...(c.severity ? { severity: c.severity } : {}),
    status: state?.failures ? "failing" : state?.last_success_at ? "ok" : "pending",
    last_success_at: state?.last_success_at ?? null,
    last_error: state?.last_error ?? null,
    last_error_at: state?.last_error_at ?? null,
  };
}

export interface ChannelState {
  failures: number;
  last_success_at: string | null;
  last_error: string | null;
  last_error_at: string | null;
}

export function ruleView(rule: Rule, states: Array<ChannelState | undefined>) {
  const { channels, console_origin: _origin, ...rest } = rule;
  return { ...rest, channels: channels.map((c, i) => channelView(c, states[i])) };
}
