import type { Firing, Rule, StoredChannel } from "./rules";

/**
 * The e-mail channel: Cloudflare Email Service through the deployment's
 * send_email binding (ALERT_EMAIL in wrangler.toml; `wrangler dev` and the
 * tests' runtime log the mail instead of sending it). The structured send()
 * form: the service writes the MIME, Date and Message-ID itself, so nothing
 * of ours is a raw header line. Every value that ends up in the subject or on
 * a line of the body still goes through oneLine: a rule name or an event's
 * display sentence holding a line break must not pass for another header or
 * another event.
 */

/**
 * An address as a header carries it without quoting: dot-atom local part,
 * host name of letters, digits and hyphens (internationalised domains in
 * their xn-- form). No quotes, spaces, commas, angle brackets or line
 * breaks, so an address can never become a second recipient or header.
 */
const ATOM = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+";
const LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
const ADDRESS = new RegExp(`^${ATOM}(?:\\.${ATOM})*@${LABEL}(?:\\.${LABEL})+$`);

export function emailAddressProblem(address: string): string | null {
  if (address.length > 254 || !ADDRESS.test(address) || address.indexOf("@") > 64) {
    return "must be an e-mail address (local@example.com: ASCII, no display name, at most 254 characters)";
  }
  return null;
}

/** What the channel shows as its url: the recipients as one mailto: URI (RFC 6068). */
export function mailtoOf(to: string[]): string {
  return `mailto:${to.map((a) => encodeURIComponent(a).replaceAll("%40", "@")).join(",")}`;
}

/** Tests only swap these: the runtime's send_email binding and how long a send may take. */
export interface EmailPolicy {
  binding(env: Env): SendEmail | undefined;
  timeoutMs: number;
}

export const DEFAULT_EMAIL_POLICY: EmailPolicy = {
  // Absent when the deployment dropped the [[send_email]] binding, whatever the generated Env says.
  binding: (env) => (env as Partial<Pick<Env, "ALERT_EMAIL">>).ALERT_EMAIL,
  timeoutMs: 30_000,
};

export const emailPolicy: EmailPolicy = { ...DEFAULT_EMAIL_POLICY };

/** Tests only: overrides parts of the policy; returns a function that restores the defaults. */
export function setEmailPolicy(overrides: Partial<EmailPolicy>): () => void {
  Object.assign(emailPolicy, overrides);
  return () => Object.assign(emailPolicy, DEFAULT_EMAIL_POLICY);
}

export const NO_EMAIL_BINDING = "this deployment has no e-mail binding (a [[send_email]] binding named ALERT_EMAIL in wrangler.toml), so it cannot send e-mail; choose another channel type";

export function hasEmailBinding(env: Env): boolean {
  return emailPolicy.binding(env) !== undefined;
}

/** Control characters (line breaks included) and Unicode line separators become one space. */
export function oneLine(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, " ").replace(/ {2,}/g, " ").trim();
}

export interface AlertMail {
  from: string;
  to: string[];
  subject: string;
  text: string;
  /** X- headers only: Email Service refuses other custom headers. */
  headers: Record<string, string>;
}

const SUBJECT_MAX = 200;

/** Where an integrity signal's reason says what to do: "<what happened> Next: <what to do>" (src/alerts/integrity.ts). */
function splitNext(reason: string): { why: string; next: string | null } {
  const at = reason.lastIndexOf(" Next: ");
  return at === -1 ? { why: reason, next: null } : { why: reason.slice(0, at), next: reason.slice(at + " Next: ".length) };
}

function subjectOf(f: Firing, kind: Rule["kind"]): string {
  const events = `${f.count} event${f.count === 1 ? "" : "s"}`;
  const what = f.test
    ? `test notification for project ${f.project_id}`
    : kind === "integrity"
      ? `integrity alert (${(f.group ?? "").split(":")[0].replaceAll("_", " ") || "trail"}) in project ${f.project_id}`
      : kind === "anomaly"
        ? `${events} this hour, unusually many, in project ${f.project_id}`
        : `${events} in project ${f.project_id}`;
  const subject = oneLine(`[Witness]${f.test ? " [TEST]" : ""} ${f.rule_name}: ${what}`);
  return subject.length > SUBJECT_MAX ? `${subject.slice(0, SUBJECT_MAX - 1)}…` : subject;
}

/**
 * The message for a firing: plain text, from what every channel is given (the
 * firing's reason and events, named by id, seq and the catalog's sentence,
 * with console links), never the actors' own fields.
 */
export function alertMail(f: Firing, rule: Pick<Rule, "kind" | "console_origin">, from: string, to: string[]): AlertMail {
  const { why, next } = rule.kind === "integrity" ? splitNext(f.reason) : { why: f.reason, next: null };
  const lines: string[] = [];
  if (f.test) {
    lines.push("TEST NOTIFICATION: sent by the rule's test action to check this channel. No event matched; nothing needs doing.", "");
  }
  lines.push(`Witness alert "${oneLine(f.rule_name)}" fired at ${f.fired_at} in project ${oneLine(f.project_id)}.`);
  lines.push(`Why: ${oneLine(why)}`);
  if (f.group) lines.push(`Group: ${oneLine(f.group)}`);
  if (f.events.length > 0) {
    lines.push("", f.count > f.events.length ? `Events (the first ${f.events.length} of ${f.count}):` : `Events (${f.events.length}):`);
    f.events.forEach((e, i) => {
      lines.push(`${i + 1}. ${oneLine(e.display ?? e.action)}`);
      lines.push(`   action ${oneLine(e.action)}, seq ${e.seq}, id ${oneLine(e.id)}, occurred ${oneLine(e.occurred_at)}${e.organization ? `, organization ${oneLine(e.organization)}` : ""}`);
      lines.push(`   ${oneLine(e.url)}`);
    });
    if (f.count > f.events.length) lines.push(`…and ${f.count - f.events.length} more: see the rule's firings.`);
  }
  if (rule.kind === "integrity" && !f.test) {
    lines.push("", "What to do next:");
    if (next) lines.push(oneLine(next));
    lines.push("Until then, treat this project's trail as unproven: GET /v1/events/verify says whether the chain still holds and where it first breaks.");
  }
  lines.push("");
  const ruleLink = rule.console_origin ? `${rule.console_origin}/console/alerts/${encodeURIComponent(f.rule_id)}` : `GET /v1/alerts/${f.rule_id}/firings`;
  lines.push(`The rule and its firings: ${oneLine(ruleLink)}`);
  lines.push(`Firing ${f.id} of rule ${f.rule_id}. A repeat of this message (after a retry) carries the same X-Witness-Firing header.`);
  return {
    from,
    to,
    subject: subjectOf(f, rule.kind),
    // Lines end in CRLF, as RFC 5322 has them; the service encodes the text.
    text: `${lines.join("\r\n")}\r\n`,
    headers: { "X-Witness-Firing": oneLine(`${f.project_id}/${f.rule_id}/${f.id}${f.test ? "/test" : ""}`) },
  };
}

/** One attempt: one message to all of the channel's recipients, within emailPolicy.timeoutMs. */
export async function sendEmailAlert(
  env: Env,
  rule: Pick<Rule, "kind" | "console_origin">,
  channel: StoredChannel,
  f: Firing,
): Promise<{ ok: true } | { ok: false; error: string }> {
  const binding = emailPolicy.binding(env);
  if (!binding) return { ok: false, error: NO_EMAIL_BINDING };
  const from = (env.ALERT_EMAIL_FROM ?? "").trim();
  if (emailAddressProblem(from)) return { ok: false, error: `ALERT_EMAIL_FROM ${JSON.stringify(from.slice(0, 100))} is not an e-mail address: set it to a sender on a domain onboarded to Email Service` };
  const to = (channel.to ?? []).filter((a) => emailAddressProblem(a) === null);
  if (to.length === 0) return { ok: false, error: "the channel has no valid recipient" };
  const mail = alertMail(f, rule, from, to);
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      binding.send(mail),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${emailPolicy.timeoutMs} ms`)), emailPolicy.timeoutMs);
      }),
    ]);
    return { ok: true };
  } catch (error) {
    const code = (error as { code?: unknown })?.code;
    const message = error instanceof Error ? error.message : String(error);
    return { ok: false, error: `send failed: ${typeof code === "string" && !message.includes(code) ? `${code}: ` : ""}${message}`.slice(0, 250) };
  } finally {
    clearTimeout(timer);
  }
}
