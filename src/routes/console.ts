import { Hono, type Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { createMiddleware } from "hono/factory";
import { csrfMatches, END_MESSAGES, endSession, openSession, resumeSession, SESSION_COOKIE, type SessionEnd } from "../auth/console-session";
import { grants } from "../auth/scopes";
import { callApi, queryOf, type ApiError as PageError, type ApiFetch, type ApiResult } from "../pages/console/console-api";
import { EventPage, NotFoundPage } from "../pages/console/event-page";
import {
  CHART_PAGE_ROWS,
  chartPages,
  chartRange,
  EventsPage,
  FILTERS,
  fromEvents,
  fromRollups,
  rollupsCanAnswer,
  type Chart,
  type ChartRange,
  type FilterValues,
} from "../pages/console/events-page";
import { viewerOf, type ConsoleEnv } from "../pages/console/console-env";
import { CONSOLE_CSP, LacksPage, render } from "../pages/console/layout";
import { SignInPage } from "../pages/console/sign-in-page";
import { ApiError, errorBody } from "../lib/errors";
import { paidByPage } from "../middleware/rate-limit";
import { sameOrigin, sessionCookieOptions } from "../middleware/browser-session";
import type { AppEnv } from "../middleware/app-env";


const cookieOptions = (c: Context, expires?: Date) => sessionCookieOptions(c, "/console", expires);

const isApi = (c: Context) => c.req.path.startsWith("/console/api/");

function refuse(c: Context, why: string) {
  if (isApi(c)) return c.json({ error: { code: "FORBIDDEN", message: why, details: {} } }, 403);
  return c.html(LacksPage({ title: "Refused", message: why }), 403);
}

/** No (more) session: scripts get a 401 saying why, pages go to the sign-in page, which says why. */
function toSignIn(c: Context, reason: SessionEnd | null) {
  if (reason) deleteCookie(c, SESSION_COOKIE, cookieOptions(c));
  if (isApi(c)) {
    return c.json({ error: { code: "UNAUTHORIZED", message: reason ? END_MESSAGES[reason] : "Sign in to the console first", details: {} } }, 401);
  }
  return c.redirect(`/console/sign-in${reason ? `?ended=${reason}` : ""}`, 303);
}

const requireSession = createMiddleware<ConsoleEnv>(async (c, next) => {
  const secret = getCookie(c, SESSION_COOKIE);
  if (!secret) return toSignIn(c, null);
  const resumed = await resumeSession(c.env, secret);
  if (!resumed.ok) return toSignIn(c, resumed.reason);
  c.set("session", resumed.session);
  if (c.req.method !== "GET" && c.req.method !== "HEAD") {
    if (!sameOrigin(c)) return refuse(c, "This request did not come from the console's own pages, so it was refused.");
    const presented = isApi(c) ? c.req.header("X-CSRF-Token") : String((await c.req.parseBody()).csrf ?? "");
    if (!csrfMatches(resumed.session, presented)) return refuse(c, "This form is stale or was not sent by the console (its CSRF token does not match); reload the page and try again.");
  }
  await next();
});

type Call = (target: string) => Promise<ApiResult<any>>;

/**
 * The events chart counts what the table's question matches in the chart's
 * range: from the ledger's rollups where they can say (no filter, or only
 * action filters), else from the matching events themselves, at most
 * chartPages pages of them (the chart says which).
 */
async function chartOf(call: Call, values: FilterValues, range: ChartRange | null): Promise<{ chart: Chart | null; error: PageError | null }> {
  if (!range) return { chart: null, error: null };
  if (rollupsCanAnswer(values)) {
    const res = await call(`/v1/stats/activity${queryOf({ from: range.from, to: range.to })}`);
    if (!res.ok) return { chart: null, error: res.error };
    const chart = fromRollups(res.data, values);
    if (chart) return { chart, error: null };
  }
  const path = values.q ? "/v1/events/search" : "/v1/events";
  const filters = Object.fromEntries(FILTERS.filter((f) => f !== "limit").map((f) => [f, values[f]]));
  const events: { action: string; occurred_at: string }[] = [];
  let cursor: string | null = null;
  const pages = chartPages(values);
  for (let page = 0; page < pages; page++) {
    const res = await call(`${path}${queryOf({ ...filters, date_from: range.from, date_to: range.to, limit: String(CHART_PAGE_ROWS), cursor })}`);
    if (!res.ok) return { chart: null, error: res.error };
    for (const e of res.body.data as { action: string; occurred_at: string }[]) events.push({ action: e.action, occurred_at: e.occurred_at });
    cursor = res.body.nextCursor ?? null;
    if (!cursor) break;
  }
  return { chart: fromEvents(events, range, cursor !== null, pages * CHART_PAGE_ROWS), error: null };
}

/**
 * The web console at /console: server-rendered pages that call the public API
 * in-process as the signed-in key (`api` is the Worker's own fetch), and
 * /console/api/v1/*, the same API for the pages' scripts, authenticated by
 * the session cookie instead of a bearer key. `more` adds the pages of
 * other route files (src/routes/console-manage.ts), after the read pages and
 * before the catch-all; src/app.ts passes them, so no route imports another.
 */
export type ConsolePages = (app: Hono<ConsoleEnv>, api: ApiFetch) => void;

export function consoleRoutes(api: ApiFetch, ...more: ConsolePages[]) {
  const app = new Hono<ConsoleEnv>().basePath("/console");

  app.use("*", async (c, next) => {
    await next();
    c.header("Content-Security-Policy", CONSOLE_CSP);
    c.header("X-Content-Type-Options", "nosniff");
    // Not no-referrer: with it, browsers send Origin: null on POST, which the Origin check must refuse.
    c.header("Referrer-Policy", "same-origin");
    c.header("X-Frame-Options", "DENY");
    if (!c.res.headers.has("Cache-Control")) c.header("Cache-Control", "no-store");
  });

  app.get("/", (c) => c.redirect("/console/events", 303));

  app.get("/sign-in", (c) => {
    const ended = c.req.query("ended") as SessionEnd | undefined;
    const notice = ended && ended in END_MESSAGES ? END_MESSAGES[ended] : null;
    return c.html(render(SignInPage({ notice, error: null })));
  });

  app.post("/sign-in", async (c) => {
    // Login CSRF: a foreign page must not sign a visitor into the attacker's project.
    if (!sameOrigin(c)) return refuse(c, "Sign-in must be sent from the console's own sign-in page.");
    const form = await c.req.parseBody();
    const opened = await openSession(c.env, typeof form.api_key === "string" ? form.api_key : "");
    if (!opened.ok) return c.html(render(SignInPage({ notice: null, error: opened.message })), 401);
    setCookie(c, SESSION_COOKIE, opened.secret, cookieOptions(c, new Date(opened.expiresAt)));
    return c.redirect("/console/events", 303);
  });

  app.post("/sign-out", async (c) => {
    if (!sameOrigin(c)) return refuse(c, "Sign-out must be sent from the console's own pages.");
    const secret = getCookie(c, SESSION_COOKIE);
    if (secret) {
      const resumed = await resumeSession(c.env, secret);
      const form = await c.req.parseBody();
      if (resumed.ok && !csrfMatches(resumed.session, String(form.csrf ?? ""))) return refuse(c, "This form is stale; reload the page and try again.");
      await endSession(c.env, secret);
    }
    deleteCookie(c, SESSION_COOKIE, cookieOptions(c));
    return c.redirect("/console/sign-in?ended=signed_out", 303);
  });

  app.use("*", requireSession);

  // The API for the pages' scripts: same answers as /v1, the key taken from the session.
  app.all("/api/v1/*", async (c) => {
    const url = new URL(c.req.url);
    const target = new URL(`${c.req.path.slice("/console/api".length)}${url.search}`, url.origin);
    const headers = new Headers({ Authorization: `Bearer ${c.get("session").apiKey}` });
    for (const name of ["Content-Type", "Range", "Accept", "CF-Connecting-IP", "Idempotency-Key"]) {
      const value = c.req.header(name);
      if (value) headers.set(name, value);
    }
    const body = c.req.method === "GET" || c.req.method === "HEAD" ? undefined : await c.req.arrayBuffer();
    const res = await api(new Request(target, { method: c.req.method, headers, body }), c.env, c.executionCtx, c.req.raw);
    return new Response(res.body, res);
  });

  app.get("/events", async (c) => {
    const session = c.get("session");
    const viewer = viewerOf(session);
    if (!grants(session.scopes, "read")) return c.html(LacksPage({ viewer, scope: "read" }), 403);
    const values: FilterValues = {};
    for (const f of [...FILTERS, "cursor"] as const) {
      const v = c.req.query(f);
      if (v) values[f] = v;
    }
    const path = values.q ? "/v1/events/search" : "/v1/events";
    const call = (target: string) => callApi(api, c, session.apiKey, "GET", target);
    const range = chartRange(values);
    const [res, chart, log] = await Promise.all([call(`${path}${queryOf(values)}`), chartOf(call, values, range), call("/v1/log")]);
    const page = EventsPage({
      viewer,
      values,
      rows: res.ok ? res.body.data : [],
      nextCursor: res.ok ? res.body.nextCursor : null,
      hotSince: res.ok ? (res.body.hot_since ?? null) : null,
      error: res.ok ? null : res.error,
      chart: { ...chart, range, projectTotal: log.ok && typeof log.data?.head_seq === "number" ? log.data.head_seq : null },
    });
    return c.html(render(page), res.ok ? 200 : res.status === 400 ? 400 : 502);
  });

  app.get("/events/:id", async (c) => {
    const session = c.get("session");
    const viewer = viewerOf(session);
    if (!grants(session.scopes, "read")) return c.html(LacksPage({ viewer, scope: "read" }), 403);
    const res = await callApi(api, c, session.apiKey, "GET", `/v1/events/${encodeURIComponent(c.req.param("id"))}`);
    if (!res.ok && res.status === 404) return c.html(render(NotFoundPage({ viewer, what: "No event with that id in this project." })), 404);
    if (!res.ok) return c.html(LacksPage({ viewer, title: "Cannot open the event", message: `${res.error.code}: ${res.error.message}` }), 502);
    return c.html(render(EventPage({ viewer, event: res.data })));
  });

  for (const add of more) add(app, api);

  app.all("*", (c) => c.html(render(NotFoundPage({ viewer: viewerOf(c.get("session")), what: "No such console page." })), 404));
  app.onError((error, c) => {
    if (error instanceof ApiError) return c.json(errorBody(error.code, error.message, error.details), error.status);
    console.error("console:", error);
    return c.html(LacksPage({ title: "Something went wrong", message: "Something went wrong on our side; reload the page to try again." }), 500);
  });
  return app;
}

/**
 * Mounts the console on the API's app as one catch-all: its pages are not API
 * operations (the OpenAPI document lists those), and it calls the app's own
 * fetch for every /v1 read or change it makes.
 */
export function mountConsole(app: Hono<AppEnv>, ...more: ConsolePages[]): void {
  const pages = consoleRoutes((request, env, ctx, page) => {
    // The page's request was counted against the caller's per-IP budget: its first /v1 call is not counted again.
    paidByPage(request, page);
    return app.fetch(request, env, ctx);
  }, ...more);
  const handle = (c: Context<AppEnv>) => pages.fetch(c.req.raw, c.env, c.executionCtx);
  app.all("/console", handle);
  app.all("/console/*", handle);
}
