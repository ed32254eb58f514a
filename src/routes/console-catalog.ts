import type { Hono } from "hono";
import { ActionPage, actionHref, CatalogPage, draftOf, type Preview } from "../pages/console/catalog-page";
import { callApi, queryOf, type ApiError, type ApiFetch } from "../pages/console/console-api";
import { viewerOf, type ConsoleContext, type ConsoleEnv } from "../pages/console/console-env";
import { previewSentence, templateIssues } from "../pages/console/display-preview";
import { render } from "../pages/console/layout";
import { lacks, form, statusOf } from "../pages/console/page-guards";

const WHOLE = /^[1-9]\d{0,8}$/;

/**
 * The action catalog's pages: /console/catalog (actions, schemas, validation
 * settings) and /console/catalog/<action> (its versions, a preview of its
 * sentence, a new version). Query parameters, not path segments, pick a
 * version or a preview, so no action name can collide with a sub-page.
 */
export function catalogRoutes(app: Hono<ConsoleEnv>, api: ApiFetch) {
  const call = <T = any>(c: ConsoleContext, method: string, path: string, body?: unknown) => callApi<T>(api, c, c.get("session").apiKey, method, path, body);
  const schemaPath = (action: string) => `/v1/schemas/${encodeURIComponent(action)}`;

  const catalogPage = async (c: ConsoleContext, outcome: { error?: ApiError; status?: number } = {}) => {
    const cursor = c.req.query("cursor") || null;
    const [actions, settings, schemas] = await Promise.all([
      call(c, "GET", `/v1/actions${queryOf({ limit: "200", cursor })}`),
      call(c, "GET", "/v1/catalog/settings"),
      call(c, "GET", "/v1/schemas?limit=100"),
    ]);
    const failed = [actions, settings, schemas].find((r) => !r.ok) ?? null;
    const page = CatalogPage({
      viewer: viewerOf(c.get("session")),
      settings: settings.ok ? settings.data : null,
      actions: actions.ok ? actions.data : [],
      cursor,
      nextCursor: actions.ok ? actions.body.nextCursor : null,
      schemas: schemas.ok ? schemas.data : [],
      moreSchemas: schemas.ok && schemas.body.nextCursor !== null,
      error: outcome.error ?? (failed && !failed.ok ? failed.error : null),
      saved: c.req.query("saved") === "settings",
    });
    return c.html(render(page), (outcome.status ?? statusOf(failed)) as 200);
  };

  app.get("/catalog", (c) => {
    const no = lacks(c, "read");
    if (no) return no;
    // The "open an action" form: a GET form cannot put its value in the path.
    const open = c.req.query("action")?.trim();
    if (open) return c.redirect(actionHref(open), 303);
    return catalogPage(c);
  });

  app.post("/catalog", async (c) => {
    const no = lacks(c, "admin");
    if (no) return no;
    const f = await form(c);
    const res = await call(c, "PUT", "/v1/catalog/settings", { mode: f.mode, unknown_actions: f.unknown_actions });
    return res.ok ? c.redirect("/console/catalog?saved=settings", 303) : catalogPage(c, { error: res.error, status: 400 });
  });

  const preview = async (c: ConsoleContext, action: string, saved: string | null): Promise<Preview> => {
    const typed = c.req.query("template") ?? "";
    const template = typed || saved || "";
    const eventId = (c.req.query("event") ?? "").trim();
    const result: Preview = { template, typed: typed !== "", eventId, issues: template ? templateIssues(template) : [], event: null, sentence: null, error: null };
    if (!template || result.issues.length > 0) return result;
    if (eventId) {
      const one = await call(c, "GET", `/v1/events/${encodeURIComponent(eventId)}`);
      if (one.ok) result.event = one.data;
      else result.error = one.status === 404 ? { code: "NOT_FOUND", message: "No event with that id in this project." } : one.error;
    } else {
      const latest = await call(c, "GET", `/v1/events${queryOf({ action, limit: "1" })}`);
      if (latest.ok) result.event = latest.data[0] ?? null;
      else result.error = latest.error;
    }
    if (result.event) result.sentence = previewSentence(template, result.event);
    return result;
  };

  const actionPage = async (c: ConsoleContext, outcome: { draft?: string; error?: ApiError; status?: number } = {}) => {
    const action = c.req.param("action") ?? "";
    const version = c.req.query("version") || null;
    const [detail, asked] = await Promise.all([
      call(c, "GET", schemaPath(action)),
      version ? call(c, "GET", `${schemaPath(action)}/versions/${encodeURIComponent(version)}`) : Promise.resolve(null),
    ]);
    // No schema yet is the normal state of a new action, not an error.
    const detailFailed = !detail.ok && detail.status !== 404 ? detail : null;
    const askedFailed = asked && !asked.ok ? asked : null;
    const newest = detail.ok ? detail.data : null;
    const shown = asked?.ok ? asked.data : newest;
    const saved = c.req.query("saved") ?? "";
    const page = ActionPage({
      viewer: viewerOf(c.get("session")),
      action,
      newest,
      shown,
      preview: await preview(c, action, shown?.document.display ?? null),
      draft: outcome.draft ?? draftOf(shown?.document ?? null),
      error: outcome.error ?? detailFailed?.error ?? askedFailed?.error ?? null,
      saved: WHOLE.test(saved) ? Number(saved) : null,
    });
    return c.html(render(page), (outcome.status ?? statusOf(detailFailed ?? askedFailed)) as 200);
  };

  app.get("/catalog/:action", (c) => lacks(c, "read") ?? actionPage(c));

  app.post("/catalog/:action", async (c) => {
    const no = lacks(c, "admin");
    if (no) return no;
    const action = c.req.param("action");
    const draft = (await form(c)).document ?? "";
    let document: unknown;
    try {
      document = JSON.parse(draft);
    } catch (e) {
      return actionPage(c, { draft, error: { code: "VALIDATION_ERROR", message: `The document is not valid JSON (${(e as Error).message})` }, status: 400 });
    }
    const res = await call(c, "PUT", schemaPath(action), document);
    if (res.ok) return c.redirect(actionHref(action, { saved: String(res.data.version) }), 303);
    return actionPage(c, { draft, error: res.error, status: 400 });
  });
}
