import type { Hono } from "hono";
import { AlertsPage, alertsHref, RulePage, ruleHref, type AlertRule, type Done, type Draft, type Firing, type Revealed } from "../pages/console/alerts-page";
import { callApi, queryOf, type ApiError, type ApiFetch, type ApiResult } from "../pages/console/console-api";
import { viewerOf, type ConsoleContext, type ConsoleEnv } from "../pages/console/console-env";
import { NotFoundPage } from "../pages/console/event-page";
import { LacksPage, render } from "../pages/console/layout";
import { lacks, form, statusOf } from "../pages/console/page-guards";

const FIRINGS_PER_PAGE = 20;

const text = (v: string | undefined) => (v ?? "").trim();

/** A number field: blank is absent; anything else not a number goes to the API as typed, so its refusal names the field. */
function numberOf(v: string | undefined): number | string | undefined {
  const t = text(v);
  if (t === "") return undefined;
  return /^\d+(\.\d+)?$/.test(t) ? Number(t) : t;
}

/** The one channel a form describes; no type means none (the rule keeps its firings only). */
function channelsOf(f: Record<string, string>): Record<string, unknown>[] {
  const type = text(f.channel_type);
  if (!type) return [];
  const channel: Record<string, unknown> = { type };
  if (type === "email") {
    // The API names each bad address by its place (channels.0.to.<j>).
    return [{ type, to: (f.email_to ?? "").split(",").map((a) => a.trim()).filter(Boolean) }];
  }
  if (text(f.channel_url)) channel.url = text(f.channel_url);
  if (type === "pagerduty") {
    // Sent even when blank, so the API's refusal says what a routing key must be.
    channel.routing_key = text(f.routing_key);
    if (text(f.severity)) channel.severity = text(f.severity);
  }
  return [channel];
}

function ruleOf(f: Record<string, string>): Record<string, unknown> {
  const kind = f.kind === "anomaly" ? "anomaly" : "events";
  const match: Record<string, unknown> = {};
  const actions = (f.actions ?? "").split(",").map((a) => a.trim()).filter(Boolean);
  if (actions.length > 0) match.actions = actions;
  if (text(f.organization)) match.organization = text(f.organization);
  if (text(f.actor_id)) match.actor_id = text(f.actor_id);
  const body: Record<string, unknown> = { name: text(f.name), kind, match, channels: channelsOf(f) };
  const count = numberOf(f.threshold_count);
  const window = numberOf(f.window_seconds);
  // Any threshold field makes a threshold: one given without the other is the API's to refuse, by name.
  if (count !== undefined || window !== undefined || text(f.group_by)) {
    body.threshold = { count, window_seconds: window, ...(text(f.group_by) ? { group_by: text(f.group_by) } : {}) };
  }
  const minCount = numberOf(f.min_count);
  const sensitivity = numberOf(f.sensitivity);
  if (kind === "anomaly" && (minCount !== undefined || sensitivity !== undefined)) body.anomaly = { min_count: minCount, sensitivity };
  const cooldown = numberOf(f.cooldown_seconds);
  if (cooldown !== undefined) body.cooldown_seconds = cooldown;
  return body;
}

/** What a form may keep after a refusal: never a URL (Slack's and Teams' are secrets) nor a routing key. */
function draftOf(f: Record<string, string>): Draft {
  const { csrf: _csrf, channel_url: _url, routing_key: _key, ...kept } = f;
  return kept;
}

function revealedOf(rule: AlertRule): Revealed | null {
  const secrets = rule.channels.flatMap((ch, channel) => (ch.secret ? [{ channel, url: ch.url, secret: ch.secret }] : []));
  return secrets.length > 0 ? { ruleName: rule.name, secrets } : null;
}

/**
 * The alert rules' pages: /console/alerts (every rule, its channels' state, a
 * form for a new one) and /console/alerts/<id> (the rule and its firings).
 * Each change is a plain form posted back here, answered with a redirect
 * unless the answer holds something shown only once (a webhook secret, a
 * test's deliveries).
 */
export function alertRoutes(app: Hono<ConsoleEnv>, api: ApiFetch) {
  const call = <T = any>(c: ConsoleContext, method: string, path: string, body?: unknown) => callApi<T>(api, c, c.get("session").apiKey, method, path, body);
  const rulePath = (id: string) => `/v1/alerts/${encodeURIComponent(id)}`;

  const listPage = async (c: ConsoleContext, outcome: { error?: ApiError; status?: number; done?: Done; revealed?: Revealed | null; draft?: Draft } = {}) => {
    const list = await call<AlertRule[]>(c, "GET", "/v1/alerts");
    const rules = list.ok ? list.data : [];
    let done = outcome.done ?? null;
    if (!done) {
      const created = c.req.query("created");
      const saved = c.req.query("saved");
      const named = (id: string) => rules.find((r) => r.id === id)?.name ?? null;
      if (created) done = { kind: "created", name: named(created) };
      else if (saved) done = { kind: "saved", name: named(saved) };
      else if (c.req.query("deleted")) done = { kind: "deleted", name: null };
    }
    const page = AlertsPage({
      viewer: viewerOf(c.get("session")),
      rules,
      error: outcome.error ?? (list.ok ? null : list.error),
      done,
      revealed: outcome.revealed ?? null,
      draft: outcome.draft ?? {},
    });
    return c.html(render(page), (outcome.status ?? statusOf(list.ok ? null : list)) as 200);
  };

  const rulePage = async (c: ConsoleContext, outcome: { error?: ApiError; status?: number; tested?: Firing | null } = {}) => {
    const id = c.req.param("id") ?? "";
    const viewer = viewerOf(c.get("session"));
    const cursor = c.req.query("cursor") || null;
    const [rule, firings] = await Promise.all([
      call<AlertRule>(c, "GET", rulePath(id)),
      call<Firing[]>(c, "GET", `${rulePath(id)}/firings${queryOf({ cursor, limit: String(FIRINGS_PER_PAGE) })}`),
    ]);
    // A malformed id is refused by the API as invalid; to the reader it is a rule that is not there.
    if (!rule.ok && (rule.status === 404 || rule.status === 400)) {
      return c.html(render(NotFoundPage({ viewer, what: "No alert rule with that id in this project." })), 404);
    }
    if (!rule.ok) return c.html(LacksPage({ viewer, title: "Cannot open the alert rule", message: `${rule.error.code}: ${rule.error.message}` }), 502);
    const saved = c.req.query("saved");
    const page = RulePage({
      viewer,
      rule: rule.data,
      firings: firings.ok ? firings.data : [],
      cursor,
      nextCursor: firings.ok ? firings.body.nextCursor : null,
      error: outcome.error ?? (firings.ok ? null : firings.error),
      done: saved === rule.data.id ? { kind: "saved", name: rule.data.name } : null,
      tested: outcome.tested ?? null,
    });
    return c.html(render(page), (outcome.status ?? statusOf(firings.ok ? null : firings)) as 200);
  };

  /** After a change to one rule: back to the page its form was on. */
  const back = (c: ConsoleContext, f: Record<string, string>, id: string) =>
    c.redirect(f.from === "rule" ? ruleHref(id, { saved: id }) : alertsHref({ saved: id }), 303);

  /** A refused change to one rule: shown on the page its form was on. */
  const refused = (c: ConsoleContext, f: Record<string, string>, res: ApiResult<unknown> & { ok: false }) =>
    f.from === "rule" ? rulePage(c, { error: res.error, status: statusOf(res) }) : listPage(c, { error: res.error, status: statusOf(res) });

  app.get("/alerts", (c) => lacks(c, "read") ?? listPage(c));

  app.post("/alerts", async (c) => {
    const no = lacks(c, "admin");
    if (no) return no;
    const f = await form(c);
    const res = await call<AlertRule>(c, "POST", "/v1/alerts", ruleOf(f));
    if (!res.ok) return listPage(c, { error: res.error, status: statusOf(res), draft: draftOf(f) });
    const revealed = revealedOf(res.data);
    return revealed ? listPage(c, { done: { kind: "created", name: res.data.name }, revealed }) : c.redirect(alertsHref({ created: res.data.id }), 303);
  });

  app.get("/alerts/:id", (c) => lacks(c, "read") ?? rulePage(c));

  app.post("/alerts/:id/enabled", async (c) => {
    const no = lacks(c, "admin");
    if (no) return no;
    const id = c.req.param("id");
    const f = await form(c);
    const res = await call(c, "PATCH", rulePath(id), { enabled: f.enabled === "true" });
    return res.ok ? back(c, f, id) : refused(c, f, res);
  });

  app.post("/alerts/:id/channel", async (c) => {
    const no = lacks(c, "admin");
    if (no) return no;
    const id = c.req.param("id");
    const f = await form(c);
    const res = await call<AlertRule>(c, "PATCH", rulePath(id), { channels: channelsOf(f) });
    if (!res.ok) return refused(c, f, res);
    const revealed = revealedOf(res.data);
    return revealed ? listPage(c, { done: { kind: "saved", name: res.data.name }, revealed }) : back(c, f, id);
  });

  app.post("/alerts/:id/test", async (c) => {
    const no = lacks(c, "admin");
    if (no) return no;
    const res = await call<Firing>(c, "POST", `${rulePath(c.req.param("id"))}/test`);
    return res.ok ? rulePage(c, { tested: res.data }) : rulePage(c, { error: res.error, status: statusOf(res) });
  });

  app.post("/alerts/:id/delete", async (c) => {
    const no = lacks(c, "admin");
    if (no) return no;
    const res = await call(c, "DELETE", rulePath(c.req.param("id")));
    return res.ok ? c.redirect(alertsHref({ deleted: "1" }), 303) : listPage(c, { error: res.error, status: statusOf(res) });
  });
}
