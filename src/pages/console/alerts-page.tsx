import type { Child } from "hono/jsx";
import { DEFAULT_MIN_COUNT, DEFAULT_SENSITIVITY } from "../../alerts/anomaly";
import { grants } from "../../auth/scopes";
import { ApiProblem, Page, plural, TableBox, When, type Viewer } from "./layout";
import { queryOf, type ApiError } from "./console-api";
import type { z } from "zod";
import type { alertRuleSchema, firingSchema } from "../../schemas/alerts";

/** The API's own shapes (src/schemas/alerts.ts), as the pages read them. */
export type AlertRule = z.infer<typeof alertRuleSchema>;
type AlertChannel = AlertRule["channels"][number];
export type Firing = z.infer<typeof firingSchema>;
type Delivery = Firing["deliveries"][number];

/** The form's fields as typed, given back after a refusal so nothing has to be typed again (secrets excepted). */
export type Draft = Record<string, string>;

/** What the last change did, for the notice at the top. */
export type Done = { kind: "created" | "saved" | "deleted"; name: string | null } | null;

/** A webhook channel's signing secret: the API gives it in the answer that made the channel and never again. */
export interface Revealed {
  ruleName: string;
  secrets: { channel: number; url: string; secret: string }[];
}

export const alertsHref = (query: Record<string, string | undefined> = {}) => `/console/alerts${queryOf(query)}`;
export const ruleHref = (id: string, query: Record<string, string | undefined> = {}) => `/console/alerts/${encodeURIComponent(id)}${queryOf(query)}`;

const CHANNEL_TYPES: { value: string; label: string }[] = [
  { value: "webhook", label: "Webhook (signed, Standard Webhooks)" },
  { value: "slack", label: "Slack (incoming webhook URL)" },
  { value: "teams", label: "Microsoft Teams (Workflows webhook URL)" },
  { value: "pagerduty", label: "PagerDuty (Events API v2 routing key)" },
  { value: "email", label: "E-mail (where the deployment has an e-mail binding)" },
  { value: "", label: "No channel: keep the firings only" },
];
const SEVERITIES = ["critical", "error", "warning", "info"];
const GROUP_BY = ["actor_id", "organization", "ip_address"];

/** Seconds in the largest unit that divides them, so "3600" reads as "1 h". */
export function span(seconds: number): string {
  if (seconds > 0 && seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds > 0 && seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}


/** "a or b or c", each user value its own code element. */
function either(values: string[], word = "or"): Child[] {
  return values.flatMap((v, i) => [i === 0 ? "" : i === values.length - 1 ? ` ${word} ` : ", ", <code>{v}</code>]);
}

function actionWords(patterns: string[]): Child[] {
  const exact = patterns.filter((p) => !p.endsWith("*"));
  const prefixes = patterns.filter((p) => p.endsWith("*")).map((p) => p.slice(0, -1));
  const parts: Child[][] = [];
  if (exact.length) parts.push(["action ", ...either(exact)]);
  if (prefixes.length) parts.push(["any action starting with ", ...either(prefixes)]);
  return parts.flatMap((p, i) => (i === 0 ? p : [" or ", ...p]));
}

/** What the rule looks at, as a sentence. */
export function MatchWords(props: { rule: AlertRule }) {
  const { rule } = props;
  const m = rule.match ?? {};
  if (rule.kind === "integrity") {
    return <>The trail itself: a verify job that finds a failure, a log stream turning failing or disabled, an API key expiring within 7 days.</>;
  }
  if (rule.kind === "anomaly") {
    return <>Unusual volume of {m.actions?.length ? actionWords(m.actions) : "every action"}: the hour under way (UTC) against the same hour of each of the last 7 days.</>;
  }
  const parts: Child[][] = [];
  if (m.organization !== undefined) parts.push(["in organization ", <code>{m.organization}</code>]);
  if (m.actor_id !== undefined) parts.push(["by actor ", <code>{m.actor_id}</code>]);
  if (m.actor_type !== undefined) parts.push(["by an actor of type ", <code>{m.actor_type}</code>]);
  if (m.target_type !== undefined) parts.push(["with a target of type ", <code>{m.target_type}</code>]);
  for (const [k, v] of Object.entries(m.metadata ?? {})) parts.push(["with metadata ", <code>{k}</code>, " = ", <code>{JSON.stringify(v)}</code>]);
  return (
    <>
      {m.actions?.length ? ["Events of ", ...actionWords(m.actions)] : "Every event"}
      {parts.flatMap((p, i) => [i === 0 ? " " : ", ", ...p])}.
    </>
  );
}

const orDefault = (set: number | undefined, fallback: number) => String(set ?? fallback);

/** When the rule fires and how long it then stays quiet, as a sentence. */
export function FiresWords(props: { rule: AlertRule }) {
  const { rule } = props;
  const quiet = rule.cooldown_seconds > 0 ? ` Then quiet for ${span(rule.cooldown_seconds)}${rule.threshold?.group_by ? ` (per ${rule.threshold.group_by})` : ""}.` : "";
  if (rule.kind === "integrity") return <>At most once a day per cause and subject.</>;
  if (rule.kind === "anomaly") {
    const min = orDefault(rule.anomaly?.min_count, DEFAULT_MIN_COUNT);
    const sensitivity = orDefault(rule.anomaly?.sensitivity, DEFAULT_SENSITIVITY);
    return (
      <>
        When this hour's count reaches the larger of {min} and the usual count plus {sensitivity} × its spread (min_count {min}, sensitivity {sensitivity}); at
        most once an hour.{quiet}
      </>
    );
  }
  if (!rule.threshold) return <>On every matching event (those committed within a second or so share one notification).{quiet}</>;
  const t = rule.threshold;
  return (
    <>
      When {plural(t.count, "matching event")} {t.count === 1 ? "is" : "are"} committed within {span(t.window_seconds)}
      {t.group_by ? `, counted per ${t.group_by}` : ""}.{quiet}
    </>
  );
}

const STATUS_WORDS: Record<AlertChannel["status"], string> = {
  pending: "nothing sent yet",
  ok: "its last delivery arrived",
  failing: "its last delivery failed",
};

function ChannelItem(props: { channel: AlertChannel; index: number }) {
  const ch = props.channel;
  const failing = ch.status === "failing";
  return (
    <li class={failing ? "channel failing" : "channel"}>
      <p>
        Channel {String(props.index + 1)}: <strong>{ch.type}</strong> → <code>{ch.url}</code>
        {ch.severity ? <> · severity {ch.severity}</> : null} ·{" "}
        <span class={`badge ${failing ? "bad" : ch.status === "ok" ? "ok" : ""}`}>{failing ? "⚠ failing" : ch.status}</span>{" "}
        <span class="muted">{STATUS_WORDS[ch.status] ?? ""}</span>
      </p>
      {failing ? (
        <p class="channel-error" role="note">
          <strong>Last error</strong> (<When at={ch.last_error_at} />): {ch.last_error ?? "none given"}. It is retried with backoff.
        </p>
      ) : null}
      <p class="muted">
        Last success: <When at={ch.last_success_at} />
        {!failing && ch.last_error ? (
          <>
            {" "}
            · earlier error (<When at={ch.last_error_at} />): {ch.last_error}
          </>
        ) : null}
      </p>
    </li>
  );
}

/** The channel fields of a form: one channel, its URL, routing key or addresses, and PagerDuty's severity. */
function ChannelFields(props: { draft: Draft }) {
  const d = props.draft;
  const type = d.channel_type ?? "webhook";
  return (
    <>
      <label>
        <span>Channel</span>
        <select name="channel_type">
          {CHANNEL_TYPES.map((t) => (
            <option value={t.value} selected={t.value === type}>
              {t.label}
            </option>
          ))}
        </select>
      </label>
      <label>
        <span>URL (webhook, Slack, Teams; PagerDuty: optional)</span>
        <input type="url" name="channel_url" autocomplete="off" placeholder="https://" />
      </label>
      <label>
        <span>Routing key (PagerDuty)</span>
        <input type="password" name="routing_key" autocomplete="off" />
      </label>
      <label>
        <span>E-mail addresses (comma-separated, up to 10)</span>
        <input type="text" name="email_to" autocomplete="off" value={d.email_to ?? ""} placeholder="security@example.com" />
      </label>
      <label>
        <span>Severity (PagerDuty)</span>
        <select name="severity">
          <option value="">warning (the default)</option>
          {SEVERITIES.map((s) => (
            <option value={s} selected={d.severity === s}>
              {s}
            </option>
          ))}
        </select>
      </label>
    </>
  );
}

/** One rule: what it watches, when it fires, its channels, and (admin) what can be done to it. */
export function RuleCard(props: { rule: AlertRule; viewer: Viewer; from: "list" | "rule" }) {
  const { rule, viewer } = props;
  const admin = grants(viewer.scopes, "admin");
  const csrf = <input type="hidden" name="csrf" value={viewer.csrf} />;
  const back = <input type="hidden" name="from" value={props.from} />;
  const base = ruleHref(rule.id);
  const failing = rule.channels.filter((ch) => ch.status === "failing").length;
  return (
    <section class={`card rule${failing ? " failing" : ""}`} aria-label={`Alert rule ${rule.name}`}>
      <h2>
        {props.from === "list" ? <a href={base}>{rule.name}</a> : rule.name} <span class="badge">{rule.kind}</span>{" "}
        <span class={`badge ${rule.enabled ? "ok" : ""}`}>{rule.enabled ? "enabled" : "disabled"}</span>
        {failing ? <span class="badge bad">{`⚠ ${plural(failing, "channel")} failing`}</span> : null}
      </h2>
      <dl class="fields">
        <dt>Watches</dt>
        <dd>
          <MatchWords rule={rule} />
        </dd>
        <dt>Fires</dt>
        <dd>
          <FiresWords rule={rule} />
        </dd>
        <dt>Channels</dt>
        <dd>
          {rule.channels.length === 0 ? (
            <p class="muted">
              {rule.kind === "integrity"
                ? "None yet: its firings are kept, but nobody is told. Set a channel to be told (the daily incremental verify starts then too)."
                : "None: its firings are kept, but nobody is told."}
            </p>
          ) : (
            <ul class="plain channels">
              {rule.channels.map((ch, i) => (
                <ChannelItem channel={ch} index={i} />
              ))}
            </ul>
          )}
        </dd>
        <dt>Id</dt>
        <dd>
          <code>{rule.id}</code> · created <When at={rule.created_at} /> · changed <When at={rule.updated_at} />
        </dd>
      </dl>
      {props.from === "list" ? (
        <p>
          <a href={base}>Its firings and their deliveries</a>
        </p>
      ) : null}
      {admin ? (
        <div class="row-actions">
          <form method="post" action={`${base}/enabled`} class="inline">
            {csrf}
            {back}
            <input type="hidden" name="enabled" value={rule.enabled ? "false" : "true"} />
            <button type="submit">{rule.enabled ? "Disable" : "Enable"}</button>
          </form>
          <form method="post" action={`${base}/test`} class="inline">
            {csrf}
            <button type="submit" disabled={rule.channels.length === 0} title={rule.channels.length === 0 ? "Set a channel first" : undefined}>
              Send a test notification
            </button>
          </form>
          <form method="post" action={`${base}/delete`} class="inline">
            {csrf}
            <button type="submit" class="danger">
              Delete rule
            </button>
          </form>
          <details class="set-channel">
            <summary>{rule.channels.length === 0 ? "Set its channel" : "Replace its channels"}</summary>
            <form method="post" action={`${base}/channel`} class="filters">
              {csrf}
              {back}
              <ChannelFields draft={{}} />
              <div class="actions">
                <button type="submit">Save the channel</button>
              </div>
            </form>
            {rule.channels.length > 0 ? (
              <p class="muted">
                Saving replaces all {String(rule.channels.length)} of its channels with this one (or none); a new webhook channel gets a new secret.
              </p>
            ) : null}
          </details>
        </div>
      ) : null}
    </section>
  );
}

function RevealedSecrets(props: { revealed: Revealed | null }) {
  const r = props.revealed;
  if (!r || r.secrets.length === 0) return null;
  return (
    <div class="notice reveal" role="status">
      <p>
        <strong>Copy this now: it will not be shown again.</strong> The webhook signing secret of rule “{r.ruleName}”
        {r.secrets.length > 1 ? "'s webhook channels" : ""} (Standard Webhooks; your receiver checks each notification's signature with it):
      </p>
      <ul class="plain">
        {r.secrets.map((s) => (
          <li>
            Channel {String(s.channel + 1)} → <code>{s.url}</code>: <code class="secret">{s.secret}</code>
          </li>
        ))}
      </ul>
      <p class="muted">Witness keeps it sealed; if it is lost, set the channel again to get a new one.</p>
    </div>
  );
}

function DoneNotice(props: { done: Done }) {
  const d = props.done;
  if (!d) return null;
  const text =
    d.kind === "deleted"
      ? "The rule was deleted; its undelivered notifications were dropped."
      : `Rule “${d.name ?? ""}” ${d.kind === "created" ? "created: it sees events committed from now on" : "saved"}.`;
  return (
    <p class="notice" role="status">
      {text} (Recorded in the chain.)
    </p>
  );
}

/** /console/alerts: every rule with its channels' state, and (admin) a form for a new rule. */
export function AlertsPage(props: { viewer: Viewer; rules: AlertRule[]; error: ApiError | null; done: Done; revealed: Revealed | null; draft: Draft }) {
  const admin = grants(props.viewer.scopes, "admin");
  const d = props.draft;
  const failing = props.rules.filter((r) => r.channels.some((ch) => ch.status === "failing"));
  return (
    <Page title="Alerts" viewer={props.viewer} active="alerts">
      <h1>Alerts</h1>
      <ApiProblem error={props.error} />
      <DoneNotice done={props.done} />
      <RevealedSecrets revealed={props.revealed} />
      {failing.length > 0 ? (
        <div class="notice bad" role="alert">
          <p>
            <strong>⚠ Failing channels:</strong> {failing.map((r) => r.name).join(", ")}. Their notifications are not arriving; each shows its last error
            below.
          </p>
        </div>
      ) : null}
      {props.rules.length === 0 && !props.error ? <p class="muted">No alert rules.</p> : null}
      {props.rules.map((rule) => (
        <RuleCard rule={rule} viewer={props.viewer} from="list" />
      ))}
      {admin ? (
        <section class="card" aria-labelledby="new-rule">
          <h2 id="new-rule">Create a rule</h2>
          <p class="muted">
            A rule sees the events committed after it is made, each once. Without a threshold it fires for every matching event; with one, when that many
            match within the window. An anomaly rule watches its actions' hourly volume instead (give actions only).
          </p>
          <form method="post" action="/console/alerts" class="filters">
            <input type="hidden" name="csrf" value={props.viewer.csrf} />
            <label>
              <span>Name</span>
              <input type="text" name="name" required maxlength={100} autocomplete="off" value={d.name ?? ""} />
            </label>
            <label>
              <span>Kind</span>
              <select name="kind">
                <option value="events" selected={d.kind !== "anomaly"}>
                  events: matching events
                </option>
                <option value="anomaly" selected={d.kind === "anomaly"}>
                  anomaly: unusual hourly volume
                </option>
              </select>
            </label>
            <label>
              <span>Actions (comma-separated, prefix*; blank: every action)</span>
              <input type="text" name="actions" autocomplete="off" placeholder="auth.login.failed, member.role.*" value={d.actions ?? ""} />
            </label>
            <label>
              <span>Organization</span>
              <input type="text" name="organization" autocomplete="off" value={d.organization ?? ""} />
            </label>
            <label>
              <span>Actor id</span>
              <input type="text" name="actor_id" autocomplete="off" value={d.actor_id ?? ""} />
            </label>
            <label>
              <span>Threshold: events (optional)</span>
              <input type="number" name="threshold_count" min="1" max="10000" value={d.threshold_count ?? ""} />
            </label>
            <label>
              <span>Threshold: within seconds</span>
              <input type="number" name="window_seconds" min="1" max="86400" value={d.window_seconds ?? ""} />
            </label>
            <label>
              <span>Threshold: count per</span>
              <select name="group_by">
                <option value="">the whole project</option>
                {GROUP_BY.map((g) => (
                  <option value={g} selected={d.group_by === g}>
                    {g}
                  </option>
                ))}
              </select>
            </label>
            <label>
              <span>{`Anomaly: at least this many events (default ${DEFAULT_MIN_COUNT})`}</span>
              <input type="number" name="min_count" min="1" value={d.min_count ?? ""} />
            </label>
            <label>
              <span>{`Anomaly: sensitivity (default ${DEFAULT_SENSITIVITY})`}</span>
              <input type="number" name="sensitivity" min="1" max="20" step="any" value={d.sensitivity ?? ""} />
            </label>
            <label>
              <span>Cooldown after a firing, seconds</span>
              <input type="number" name="cooldown_seconds" min="0" max="86400" value={d.cooldown_seconds ?? ""} placeholder="0" />
            </label>
            <ChannelFields draft={d} />
            <div class="actions">
              <button type="submit">Create rule</button>
            </div>
          </form>
        </section>
      ) : (
        <p class="muted">Creating, changing, testing and deleting rules needs an admin key.</p>
      )}
    </Page>
  );
}

const DELIVERY_WORDS: Record<Delivery["status"], string> = {
  pending: "not sent yet",
  retrying: "this try failed; it is retried with backoff",
  delivered: "",
  failed: "given up after its retries",
  dropped: "its channel or rule was removed",
};

function DeliveryList(props: { deliveries: Delivery[]; channels: AlertChannel[] }) {
  if (props.deliveries.length === 0) return <span class="muted">No channel: nobody was told.</span>;
  return (
    <ul class="plain deliveries">
      {props.deliveries.map((dl) => {
        const ch = props.channels[dl.channel];
        const bad = dl.status === "retrying" || dl.status === "failed";
        return (
          <li class={bad ? "delivery failing" : "delivery"}>
            Channel {String(dl.channel + 1)}
            {ch ? ` (${ch.type})` : ""}:{" "}
            <span class={`badge ${dl.status === "delivered" ? "ok" : bad ? "bad" : ""}`}>{bad ? `⚠ ${dl.status}` : dl.status}</span>{" "}
            <span class="muted">{`${DELIVERY_WORDS[dl.status] ? `${DELIVERY_WORDS[dl.status]}; ` : "after "}${plural(dl.attempts, "attempt")}`}</span>
            {dl.delivered_at ? (
              <>
                {" "}
                · at <When at={dl.delivered_at} />
              </>
            ) : null}
            {dl.last_error ? (
              <>
                {" "}
                · <strong>error:</strong> {dl.last_error}
              </>
            ) : null}
            {dl.next_attempt_at ? (
              <>
                {" "}
                · next try <When at={dl.next_attempt_at} />
              </>
            ) : null}
          </li>
        );
      })}
    </ul>
  );
}

function EventLinks(props: { firing: Firing }) {
  const f = props.firing;
  if (f.events.length === 0) return <span class="muted">{f.test ? "none (a test)" : "none listed"}</span>;
  return (
    <ul class="plain">
      {f.events.map((e) => (
        <li>
          <a href={`/console/events/${encodeURIComponent(e.id)}`} class={e.display ? "sentence" : undefined}>
            {e.display ?? e.action}
          </a>{" "}
          <span class="muted">
            #{String(e.seq)}
            {e.display ? ` · ${e.action}` : ""}
          </span>
        </li>
      ))}
      {f.count > f.events.length ? <li class="muted">{`and ${f.count - f.events.length} more`}</li> : null}
    </ul>
  );
}

/** /console/alerts/<id>: the rule, the result of a test just sent, and its firings, newest first. */
export function RulePage(props: {
  viewer: Viewer;
  rule: AlertRule;
  firings: Firing[];
  cursor: string | null;
  nextCursor: string | null;
  error: ApiError | null;
  done: Done;
  tested: Firing | null;
}) {
  const { rule } = props;
  const t = props.tested;
  return (
    <Page title={`Alert: ${rule.name}`} viewer={props.viewer} active="alerts">
      <p>
        <a href="/console/alerts">All alert rules</a>
      </p>
      <h1>
        Alert rule: <span>{rule.name}</span>
      </h1>
      <ApiProblem error={props.error} />
      <DoneNotice done={props.done} />
      {t ? (
        <div class={`notice${t.deliveries.some((dl) => dl.status !== "delivered") ? " bad" : ""}`} role="status" aria-label="Test result">
          <p>
            <strong>Test notification sent</strong> (marked [TEST]; it is kept in the firings below):
          </p>
          <DeliveryList deliveries={t.deliveries} channels={rule.channels} />
        </div>
      ) : null}
      <RuleCard rule={rule} viewer={props.viewer} from="rule" />
      <section class="card" aria-labelledby="firings-title">
        <h2 id="firings-title">Firings</h2>
        <TableBox label="Table of firings" cards>
          <table class="firings">
            <caption>
              {props.firings.length === 0
                ? props.cursor
                  ? "No older firings."
                  : "It has not fired yet."
                : `${plural(props.firings.length, "firing")}, newest first${props.cursor ? " (an older page)" : ""}`}
            </caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Why</th>
                <th scope="col">Events</th>
                <th scope="col">Matching</th>
                <th scope="col">Deliveries</th>
              </tr>
            </thead>
            <tbody>
              {props.firings.map((f) => (
                <tr>
                  <td data-label="When" class="when">
                    <When at={f.fired_at} />
                    {f.test ? (
                      <>
                        {" "}
                        <span class="badge">test</span>
                      </>
                    ) : null}
                  </td>
                  <td data-label="Why">
                    {f.reason}
                    {f.group ? (
                      <>
                        {" "}
                        <span class="muted">
                          (group <code>{f.group}</code>)
                        </span>
                      </>
                    ) : null}
                  </td>
                  <td data-label="Events">
                    <EventLinks firing={f} />
                  </td>
                  <td class="num" data-label="Matching">{String(f.count)}</td>
                  <td data-label="Deliveries">
                    <DeliveryList deliveries={f.deliveries} channels={rule.channels} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableBox>
        <nav class="pager" aria-label="Pages of firings">
          {props.cursor ? <a href={ruleHref(rule.id)}>Newest firings</a> : null}
          {props.nextCursor ? (
            <a href={ruleHref(rule.id, { cursor: props.nextCursor })} rel="next">
              Older firings
            </a>
          ) : null}
        </nav>
      </section>
    </Page>
  );
}
