import { newWebhookSecret, signWebhook } from "../streams/formats";
import { openCredential, sealCredential } from "../streams/secrets";
import { checkStreamTarget, type TargetRules } from "../streams/targets";
import { streamPolicy } from "../streams/transport";
import { hasEmailBinding, mailtoOf, NO_EMAIL_BINDING, sendEmailAlert } from "./email";
import type { ChannelType, FiredEvent, Firing, Rule, StoredChannel } from "./rules";

/**
 * How a firing reaches people. Every channel goes through the streams'
 * transport: the same SSRF guard before every attempt (checkStreamTarget),
 * the same timeout, the same sealed secrets (AES-GCM bound to the rule id).
 * Notifications name events by id, seq, action, sentence and time, with a
 * console link: not the actor's fields, which may be erased later (only what
 * the catalog's sentence shows, rendered without the e-mail). E-mail goes
 * through the deployment's send_email binding instead (email.ts).
 */

export const PAGERDUTY_EVENTS_URL = "https://events.pagerduty.com/v2/enqueue";

export interface ChannelInput {
  type: ChannelType;
  url?: string;
  routing_key?: string;
  severity?: StoredChannel["severity"];
  /** email: the recipients (checked as addresses by the schema). */
  to?: string[];
}

/** A channel to store, and the secret to show once (a webhook's signing secret), or why it cannot be. */
export async function sealChannel(env: Env, ruleId: string, input: ChannelInput, rules: TargetRules): Promise<{ channel: StoredChannel; secret: string | null } | string> {
  if (input.type === "email") {
    if (!hasEmailBinding(env)) return `type: ${NO_EMAIL_BINDING}`;
    // The same address twice is one recipient (case aside: mailbox hosts fold it); the first spelling stays.
    const to = (input.to ?? []).filter((a, i, all) => all.findIndex((b) => b.toLowerCase() === a.toLowerCase()) === i);
    if (to.length === 0) return "to: an e-mail channel needs at least one address";
    return { channel: { type: "email", url: mailtoOf(to), to, sealed: "" }, secret: null };
  }
  const url = input.type === "pagerduty" ? (input.url ?? PAGERDUTY_EVENTS_URL) : input.url;
  if (!url) return "url is required for this channel type";
  const check = await checkStreamTarget(url, rules);
  if (!check.ok) return `url: ${check.reason}`;
  if (input.type === "pagerduty" && !/^[A-Za-z0-9]{32}$/.test(input.routing_key ?? "")) return "routing_key must be the 32-character integration key of a PagerDuty Events API v2 integration";
  const secret = input.type === "webhook" ? newWebhookSecret() : input.type === "pagerduty" ? input.routing_key! : url;
  const shown = input.type === "slack" || input.type === "teams" ? `${check.url.origin}/…` : url;
  return {
    channel: { type: input.type, url: shown, sealed: await sealCredential(env, ruleId, secret), ...(input.severity ? { severity: input.severity } : {}) },
    secret: input.type === "webhook" ? secret : null,
  };
}

const line = (e: FiredEvent) => `${e.display ?? e.action} (seq ${e.seq}, ${e.occurred_at})`;

function summary(f: Firing): string {
  return `${f.test ? "[TEST] " : ""}Witness alert "${f.rule_name}": ${f.reason}`;
}

/** The request a channel sends for a firing. */
export async function channelRequest(channel: StoredChannel, secret: string, f: Firing): Promise<{ url: string; headers: Record<string, string>; body: string }> {
  const json = { "Content-Type": "application/json" };
  switch (channel.type) {
    case "webhook": {
      const body = JSON.stringify({ type: f.test ? "witness.alert.test" : "witness.alert.fired", project_id: f.project_id, rule: { id: f.rule_id, name: f.rule_name }, firing: f });
      const id = `alert_${f.rule_id}_${f.id}`;
      const at = String(Math.floor(Date.now() / 1000));
      return { url: channel.url, body, headers: { ...json, "webhook-id": id, "webhook-timestamp": at, "webhook-signature": await signWebhook(secret, id, at, body) } };
    }
    case "slack": {
      const events = f.events.slice(0, 10).map((e) => `• <${e.url}|${escapeSlack(line(e))}>`);
      const more = f.count > events.length ? `\n…and ${f.count - events.length} more` : "";
      return { url: secret, headers: json, body: JSON.stringify({ text: `${escapeSlack(summary(f))}\n${events.join("\n")}${more}` }) };
    }
    case "teams": {
      const body = [
        { type: "TextBlock", text: summary(f), weight: "Bolder", wrap: true },
        ...f.events.slice(0, 10).map((e) => ({ type: "TextBlock", text: `[${line(e)}](${e.url})`, wrap: true })),
      ];
      const card = { type: "AdaptiveCard", $schema: "http://adaptivecards.io/schemas/adaptive-card.json", version: "1.4", body };
      return { url: secret, headers: json, body: JSON.stringify({ type: "message", attachments: [{ contentType: "application/vnd.microsoft.card.adaptive", content: card }] }) };
    }
    case "pagerduty":
      return { url: channel.url, headers: json, body: JSON.stringify(pagerDutyEvent(secret, f, channel.severity ?? "warning")) };
    case "email":
      throw new Error("an e-mail channel sends through the send_email binding, not a request");
  }
}

/**
 * A PagerDuty Events API v2 trigger. dedup_key per rule and group: a storm
 * of firings is one incident, which PagerDuty keeps open until resolved.
 */
export function pagerDutyEvent(routingKey: string, f: Firing, severity: NonNullable<StoredChannel["severity"]>) {
  return {
    routing_key: routingKey,
    event_action: "trigger",
    dedup_key: `witness:${f.project_id}:${f.rule_id}${f.group ? `:${f.group}` : ""}${f.test ? ":test" : ""}`.slice(0, 255),
    payload: {
      summary: summary(f).slice(0, 1024),
      source: `witness/${f.project_id}`,
      severity,
      timestamp: f.fired_at,
      component: "audit-log",
      group: f.rule_name.slice(0, 255),
      class: f.events[0]?.action ?? "witness.alert.test",
      custom_details: { reason: f.reason, count: f.count, events: f.events.slice(0, 20).map((e) => ({ id: e.id, seq: e.seq, action: e.action, display: e.display })) },
    },
    links: f.events.slice(0, 5).map((e) => ({ href: e.url, text: `Event ${e.seq}` })),
  };
}

/** Slack's mrkdwn treats &, < and > as markup: event text must stay text. */
function escapeSlack(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

export type SendResult = { ok: true } | { ok: false; error: string };

/**
 * One attempt: the destination checked again (DNS may have changed), then one POST within the streams' timeout;
 * for e-mail, one send through the binding.
 */
export async function sendToChannel(env: Env, rule: Pick<Rule, "id" | "kind" | "console_origin">, channel: StoredChannel, f: Firing, rules: TargetRules): Promise<SendResult> {
  if (channel.type === "email") return sendEmailAlert(env, rule, channel, f);
  let request: { url: string; headers: Record<string, string>; body: string };
  try {
    request = await channelRequest(channel, await openCredential(env, rule.id, channel.sealed), f);
  } catch (error) {
    return { ok: false, error: `cannot open the channel's secret: ${error instanceof Error ? error.message : String(error)}` };
  }
  const check = await checkStreamTarget(request.url, rules);
  if (!check.ok) return { ok: false, error: `destination refused: ${check.reason}` };
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), streamPolicy.timeoutMs);
  try {
    const res = await streamPolicy.fetch(request.url, { method: "POST", headers: request.headers, body: request.body, redirect: "manual", signal: controller.signal });
    const text = res.status >= 200 && res.status < 300 ? "" : (await res.text().catch(() => "")).slice(0, 200);
    if (res.status >= 200 && res.status < 300) return { ok: true };
    return { ok: false, error: `HTTP ${res.status}${text ? `: ${text}` : ""}` };
  } catch (error) {
    return { ok: false, error: `request failed: ${error instanceof Error ? error.message : String(error)}`.slice(0, 250) };
  } finally {
    clearTimeout(timer);
  }
}
