import { createRoute } from "@hono/zod-openapi";
import type { Context } from "hono";
import { sealChannel, type ChannelInput } from "../alerts/channels";
import { MAX_RULES, type Rule, type StoredChannel } from "../alerts/rules";
import { alertEvaluator } from "../alerts/wake";
import { catalogFor } from "../catalog/catalog-cache";
import { ledgerOf } from "../chain/ledger";
import { recordAdminAction } from "../chain/self-audit";
import { randomHex } from "../lib/crypto";
import { ApiError } from "../lib/errors";
import { readJsonObject } from "../lib/request-body";
import { toIssues, validate, validationError, type Issue } from "../lib/validate";
import type { AppEnv } from "../middleware/app-env";
import { access, auditActor, projectOf } from "../middleware/credential";
import { requestContext } from "../middleware/ingest";
import { AUTH_ERRORS, documented, errors, json, router } from "../middleware/openapi";
import {
  alertIdParam,
  alertRuleList,
  alertRuleResponse,
  createAlertSchema,
  firingPage,
  firingQuery,
  firingResponse,
  patchAlertSchema,
} from "../schemas/alerts";
import { targetRules } from "../streams/targets";

/**
 * Alert rules (issue 36): what to watch for in a project's events and whom to
 * tell. Rules, firings and deliveries live in the project's evaluator
 * (src/alerts/); every change is recorded in the chain (witness.alert.*).
 */
const alerts = router();
const READ = access("read");
const ADMIN = access("admin");
const BODY_ERRORS = ["VALIDATION_ERROR", "UNSUPPORTED_MEDIA_TYPE", "EVENT_TOO_LARGE"] as const;

async function sealAll(c: Context<AppEnv>, ruleId: string, inputs: ChannelInput[]) {
  const rules = targetRules(c.env);
  const issues: Issue[] = [];
  const sealed = await Promise.all(inputs.map((input) => sealChannel(c.env, ruleId, input, rules)));
  sealed.forEach((s, i) => typeof s === "string" && issues.push({ path: `channels.${i}`, message: s }));
  if (issues.length > 0) throw validationError(issues);
  return sealed as Array<{ channel: StoredChannel; secret: string | null }>;
}

/** Metadata a rule matches on must be declared filterable by the catalog, as for list filters. */
async function checkMetadata(c: Context<AppEnv>, projectId: string, metadata: Record<string, unknown> | undefined) {
  const keys = Object.keys(metadata ?? {});
  if (keys.length === 0) return;
  const catalog = await catalogFor(c.env, projectId);
  const issues = keys
    .filter((k) => !catalog.schemas().some((s) => s.document.filterable.includes(k)))
    .map((k) => ({ path: `match.metadata.${k}`, message: `no action's schema in this project's catalog declares "${k}" filterable` }));
  if (issues.length > 0) throw validationError(issues);
}

function withSecrets<T extends { channels: object[] }>(view: T, sealed: Array<{ secret: string | null }>): T {
  return { ...view, channels: view.channels.map((ch, i) => (sealed[i]?.secret ? { ...ch, secret: sealed[i].secret } : ch)) };
}

async function recorded(c: Context<AppEnv>, action: "witness.alert.created" | "witness.alert.updated" | "witness.alert.deleted", rule: { id: string; name: string }) {
  const credential = c.get("credential");
  await recordAdminAction(c.env, projectOf(credential), { action, actor: auditActor(credential), targets: [{ type: "alert_rule", id: rule.id, name: rule.name }], metadata: { rule_id: rule.id } }, requestContext(c.req.raw));
}

documented(alerts, createRoute({
  method: "post", path: "/", tags: ["Alerts"], operationId: "createAlert", summary: "Create an alert rule", security: ADMIN.security,
  description:
    "Without threshold the rule fires for matching events, gathered into one notification per second or so; with it, when count matching events are committed " +
    "within window_seconds (per group), then not again before cooldown_seconds. Rules see events committed after they are created, each once, in seq order. " +
    `At most ${MAX_RULES} rules per project. A webhook channel's signing secret is in this answer only. Recorded as witness.alert.created.`,
  request: { body: { required: true, content: { "application/json": { schema: createAlertSchema } } } },
  responses: { 201: json(alertRuleResponse, "The rule"), ...errors(...AUTH_ERRORS, ...BODY_ERRORS) },
}));
alerts.post("/", ADMIN.guard, async (c) => {
  const projectId = projectOf(c.get("credential"));
  const parsed = createAlertSchema.safeParse(await readJsonObject(c));
  if (!parsed.success) throw validationError(toIssues(parsed.error));
  const input = parsed.data;
  if (input.kind === "anomaly" && (!input.match.actions || Object.keys(input.match).length > 1 || input.threshold)) {
    throw validationError([{ path: "match", message: "an anomaly rule counts actions per hour: give match.actions (and nothing else of match, no threshold)" }]);
  }
  await checkMetadata(c, projectId, input.match.metadata);
  const evaluator = alertEvaluator(c.env, projectId);
  if ((await evaluator.total()) >= MAX_RULES) throw validationError([{ path: "", message: `a project has at most ${MAX_RULES} alert rules; delete one first` }]);
  const id = `al_${randomHex(10)}`;
  const sealed = await sealAll(c, id, input.channels);
  const now = new Date().toISOString();
  const rule: Rule = {
    id,
    name: input.name,
    kind: input.kind,
    match: input.match,
    threshold: input.threshold ?? null,
    anomaly: input.kind === "anomaly" ? (input.anomaly ?? {}) : null,
    cooldown_seconds: input.cooldown_seconds,
    enabled: input.enabled,
    channels: sealed.map((s) => s.channel),
    console_origin: new URL(c.req.url).origin,
    created_at: now,
    updated_at: now,
  };
  const ledger = ledgerOf(c.env, projectId);
  const view = await evaluator.save(rule, (await ledger.anchor()).seq);
  await ledger.setAlertRules(await evaluator.count());
  await recorded(c, "witness.alert.created", rule);
  return c.json({ data: withSecrets(view, sealed) }, 201);
});

documented(alerts, createRoute({
  method: "get", path: "/", tags: ["Alerts"], operationId: "listAlerts", summary: "The project's alert rules", security: READ.security,
  responses: { 200: json(alertRuleList, "Every rule, oldest first, with each channel's state"), ...errors(...AUTH_ERRORS) },
}));
alerts.get("/", READ.guard, async (c) => c.json({ data: await alertEvaluator(c.env, projectOf(c.get("credential"))).list() }));

documented(alerts, createRoute({
  method: "get", path: "/{id}", tags: ["Alerts"], operationId: "getAlert", summary: "One alert rule", security: READ.security,
  request: { params: alertIdParam },
  responses: { 200: json(alertRuleResponse, "The rule"), ...errors(...AUTH_ERRORS, "NOT_FOUND", "VALIDATION_ERROR") },
}));
alerts.get("/:id", READ.guard, validate("param", alertIdParam), async (c) => {
  const view = await alertEvaluator(c.env, projectOf(c.get("credential"))).get(c.req.valid("param").id);
  if (!view) throw new ApiError("NOT_FOUND", "No alert rule with that id in this project");
  return c.json({ data: view });
});

documented(alerts, createRoute({
  method: "patch", path: "/{id}", tags: ["Alerts"], operationId: "updateAlert", summary: "Change an alert rule", security: ADMIN.security,
  description: "Fields given replace the rule's; channels, when given, replace all of them (new webhook secrets, shown in this answer). Recorded as witness.alert.updated.",
  request: { params: alertIdParam, body: { required: true, content: { "application/json": { schema: patchAlertSchema } } } },
  responses: { 200: json(alertRuleResponse, "The rule"), ...errors(...AUTH_ERRORS, "NOT_FOUND", ...BODY_ERRORS) },
}));
alerts.patch("/:id", ADMIN.guard, validate("param", alertIdParam), async (c) => {
  const projectId = projectOf(c.get("credential"));
  const evaluator = alertEvaluator(c.env, projectId);
  const rule = await evaluator.stored(c.req.valid("param").id);
  if (!rule) throw new ApiError("NOT_FOUND", "No alert rule with that id in this project");
  const parsed = patchAlertSchema.safeParse(await readJsonObject(c));
  if (!parsed.success) throw validationError(toIssues(parsed.error));
  const patch = parsed.data;
  await checkMetadata(c, projectId, patch.match?.metadata);
  const sealed = patch.channels ? await sealAll(c, rule.id, patch.channels) : [];
  const next: Rule = {
    ...rule,
    ...(patch.name !== undefined ? { name: patch.name } : {}),
    ...(patch.match !== undefined ? { match: patch.match } : {}),
    ...(patch.threshold !== undefined ? { threshold: patch.threshold } : {}),
    ...(patch.cooldown_seconds !== undefined ? { cooldown_seconds: patch.cooldown_seconds } : {}),
    ...(patch.enabled !== undefined ? { enabled: patch.enabled } : {}),
    ...(patch.anomaly !== undefined && rule.kind === "anomaly" ? { anomaly: patch.anomaly ?? {} } : {}),
    ...(patch.channels ? { channels: sealed.map((s) => s.channel) } : {}),
    updated_at: new Date().toISOString(),
  };
  const view = await evaluator.save(next, (await ledgerOf(c.env, projectId).anchor()).seq);
  await recorded(c, "witness.alert.updated", next);
  return c.json({ data: withSecrets(view, sealed) });
});

documented(alerts, createRoute({
  method: "delete", path: "/{id}", tags: ["Alerts"], operationId: "deleteAlert", summary: "Delete an alert rule", security: ADMIN.security,
  description: "Its undelivered notifications are dropped. Recorded as witness.alert.deleted.",
  request: { params: alertIdParam },
  responses: { 200: json(alertRuleResponse, "The rule as it was"), ...errors(...AUTH_ERRORS, "NOT_FOUND", "VALIDATION_ERROR") },
}));
alerts.delete("/:id", ADMIN.guard, validate("param", alertIdParam), async (c) => {
  const projectId = projectOf(c.get("credential"));
  const evaluator = alertEvaluator(c.env, projectId);
  const id = c.req.valid("param").id;
  const view = await evaluator.get(id);
  if (!view || !(await evaluator.remove(id))) throw new ApiError("NOT_FOUND", "No alert rule with that id in this project");
  await ledgerOf(c.env, projectId).setAlertRules(await evaluator.count());
  await recorded(c, "witness.alert.deleted", view);
  return c.json({ data: view });
});

documented(alerts, createRoute({
  method: "post", path: "/{id}/test", tags: ["Alerts"], operationId: "testAlert", summary: "Send a test notification on every channel", security: ADMIN.security,
  description: "A firing marked as a test (test: true, [TEST] in its text) is sent at once; the answer has each channel's delivery.",
  request: { params: alertIdParam },
  responses: { 200: json(firingResponse, "The test firing and its deliveries"), ...errors(...AUTH_ERRORS, "NOT_FOUND", "VALIDATION_ERROR") },
}));
alerts.post("/:id/test", ADMIN.guard, validate("param", alertIdParam), async (c) => {
  const firing = await alertEvaluator(c.env, projectOf(c.get("credential"))).sendTest(c.req.valid("param").id);
  if (!firing) throw new ApiError("NOT_FOUND", "No alert rule with that id in this project");
  return c.json({ data: firing });
});

documented(alerts, createRoute({
  method: "get", path: "/{id}/firings", tags: ["Alerts"], operationId: "listAlertFirings", summary: "When a rule fired, why, which events, and each delivery", security: READ.security,
  request: { params: alertIdParam, query: firingQuery },
  responses: { 200: json(firingPage, "Firings, newest first"), ...errors(...AUTH_ERRORS, "NOT_FOUND", "VALIDATION_ERROR") },
}));
alerts.get("/:id/firings", READ.guard, validate("param", alertIdParam), validate("query", firingQuery), async (c) => {
  const evaluator = alertEvaluator(c.env, projectOf(c.get("credential")));
  const id = c.req.valid("param").id;
  if (!(await evaluator.stored(id))) throw new ApiError("NOT_FOUND", "No alert rule with that id in this project");
  const { cursor, limit } = c.req.valid("query");
  const page = await evaluator.firings(id, cursor === undefined ? null : Number(cursor), limit + 1);
  const more = page.length > limit;
  const shown = more ? page.slice(0, limit) : page;
  return c.json({ data: shown, nextCursor: more ? String(shown[shown.length - 1].id) : null });
});

export default alerts;
