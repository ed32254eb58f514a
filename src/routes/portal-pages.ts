import { Hono, type Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { endPortalSession, findPortalSession, PORTAL_COOKIE, redeemPortalLink, type PortalSession } from "../auth/portal";
import { recordAdminAction } from "../chain/self-audit";
import { callApi, queryOf, type ApiFetch } from "../pages/console/console-api";
import { publicCsp } from "../pages/public/layout";
import {
  EndedPage,
  EventsPage,
  ExportPage,
  PORTAL_JS,
  render,
  StartPage,
  StreamsPage,
  type PortalEvent,
  type PortalStream,
  type PortalViewer,
} from "../pages/portal/portal-pages";
import { requestContext } from "../middleware/ingest";
import { paidByPage } from "../middleware/rate-limit";
import { sameOrigin, sessionCookieOptions } from "../middleware/browser-session";
import type { AppEnv } from "../middleware/app-env";

type PortalEnv = { Bindings: Env; Variables: { session: PortalSession } };

const cookieOptions = (c: Context, expires?: Date) => sessionCookieOptions(c, "/portal", expires);

const viewerOf = (s: PortalSession): PortalViewer => ({ organization: s.organization, abilities: s.abilities, csrf: s.csrf, expiresAt: s.expiresAt });

const ENDED = "Your portal session has ended (sessions last an hour, or you signed out). Ask your vendor for a new portal link.";

function firstPage(s: PortalSession): string {
  if (s.abilities.includes("events")) return "/portal/events";
  if (s.abilities.includes("exports")) return "/portal/export";
  return "/portal/streams";
}

/** What the customer's admin did, in the project's chain, with the session's link as actor and their organization. */
function record(c: Context<PortalEnv>, action: `witness.portal.${string}`, metadata: Record<string, unknown> = {}) {
  const s = c.get("session");
  return recordAdminAction(
    c.env,
    s.projectId,
    { action, actor: { type: "portal", id: s.linkId }, organization: s.organization, targets: [{ type: "portal_link", id: s.linkId }], metadata },
    requestContext(c.req.raw),
  );
}

/**
 * The customers' admin portal at /portal (issue 37): a one-time link opens an
 * hour's session scoped to one organization. Its pages call /v1 in-process
 * with the session's own credential (src/auth/portal.ts), which the API lets
 * reach only the routes the link's abilities name and narrows to the
 * organization; nothing here reads the database around the API.
 */
export function portalRoutes(api: ApiFetch) {
  const app = new Hono<PortalEnv>().basePath("/portal");
  const call = <T = any>(c: Context<PortalEnv>, method: string, path: string, body?: unknown) => callApi<T>(api, c, c.get("session").token, method, path, body);

  app.use("*", async (c, next) => {
    await next();
    c.header("Content-Security-Policy", publicCsp({ script: true, forms: true }));
    c.header("X-Content-Type-Options", "nosniff");
    // Not no-referrer: with it, browsers send Origin: null on POST, which the same-origin check must refuse.
    c.header("Referrer-Policy", "same-origin");
    c.header("X-Frame-Options", "DENY");
    if (!c.res.headers.has("Cache-Control")) c.header("Cache-Control", "no-store");
  });

  app.get("/assets/portal.js", (c) => c.body(PORTAL_JS, 200, { "Content-Type": "text/javascript; charset=utf-8", "Cache-Control": "public, max-age=300" }));
  app.get("/start", (c) => c.html(render(StartPage())));

  app.post("/start", async (c) => {
    if (!sameOrigin(c)) return c.html(render(EndedPage({ title: "Refused", message: "The portal must be opened from its own start page." })), 403);
    const form = await c.req.parseBody();
    const redeemed = await redeemPortalLink(c.env, typeof form.token === "string" ? form.token : "");
    if (!redeemed.ok) {
      const message = {
        unknown: "This is not a portal link this service issued. Check that you opened the whole link your vendor sent.",
        used: "This portal link was already opened once; each link opens one session. Ask your vendor for a new one.",
        expired: "This portal link has expired. Ask your vendor for a new one.",
      }[redeemed.reason];
      return c.html(render(EndedPage({ title: "This link cannot be opened", message })), redeemed.reason === "unknown" ? 404 : 410);
    }
    c.set("session", redeemed.session);
    await record(c, "witness.portal.session_started", { abilities: redeemed.session.abilities, expires_at: redeemed.session.expiresAt });
    setCookie(c, PORTAL_COOKIE, redeemed.secret, cookieOptions(c, new Date(redeemed.session.expiresAt)));
    return c.redirect(firstPage(redeemed.session), 303);
  });

  app.use("*", async (c, next) => {
    const secret = getCookie(c, PORTAL_COOKIE);
    const session = secret ? await findPortalSession(c.env, secret) : null;
    if (!session) {
      if (secret) deleteCookie(c, PORTAL_COOKIE, cookieOptions(c));
      return c.html(render(EndedPage({ title: "Portal session ended", message: ENDED })), 401);
    }
    c.set("session", session);
    if (c.req.method !== "GET" && c.req.method !== "HEAD") {
      const form = await c.req.parseBody();
      if (!sameOrigin(c) || form.csrf !== session.csrf) {
        return c.html(render(EndedPage({ title: "Refused", message: "This form is stale or was not sent by the portal's own pages; reload the page and try again." })), 403);
      }
    }
    await next();
  });

  // Each page needs its ability; without it the session goes to the first page it has.
  for (const [path, ability] of [["/events", "events"], ["/export", "exports"], ["/export/*", "exports"], ["/streams", "streams"], ["/streams/*", "streams"]] as const) {
    app.use(path, async (c, next) => {
      const s = c.get("session");
      if (!s.abilities.includes(ability)) return c.redirect(firstPage(s), 303);
      await next();
    });
  }

  app.get("/", (c) => c.redirect(firstPage(c.get("session")), 303));

  app.post("/sign-out", async (c) => {
    await endPortalSession(c.env, c.get("session").id);
    deleteCookie(c, PORTAL_COOKIE, cookieOptions(c));
    return c.html(render(EndedPage({ title: "Signed out", message: "You are signed out of the portal. Your vendor can send you a new link." })));
  });

  app.get("/events", async (c) => {
    const s = c.get("session");
    const q = (c.req.query("q") ?? "").trim();
    const cursor = c.req.query("cursor");
    const res = await call<PortalEvent[]>(c, "GET", `${q ? "/v1/events/search" : "/v1/events"}${queryOf({ q, cursor, limit: "50" })}`);
    const viewer = viewerOf(s);
    if (!res.ok) return c.html(render(EventsPage({ viewer, events: [], q, next: null, error: res.error.message })), res.status === 400 ? 400 : 502);
    return c.html(render(EventsPage({ viewer, events: res.data, q, next: res.body?.nextCursor ?? null, error: null })));
  });

  app.get("/export", (c) => {
    const s = c.get("session");
    return c.html(render(ExportPage({ viewer: viewerOf(s) })));
  });

  app.get("/export/download", async (c) => {
    const s = c.get("session");
    const format = c.req.query("format") ?? "json";
    // datetime-local sends minutes without a zone: the form says UTC.
    const utc = (v: string | undefined) => (v ? (/^\d{4}-\d\d-\d\dT\d\d:\d\d$/.test(v) ? `${v}:00Z` : v) : undefined);
    const query = queryOf({ format, date_from: utc(c.req.query("date_from")), date_to: utc(c.req.query("date_to")) });
    const url = new URL(`/v1/exports${query}`, new URL(c.req.url).origin);
    const headers = new Headers({ Authorization: `Bearer ${s.token}` });
    const ip = c.req.header("CF-Connecting-IP");
    if (ip) headers.set("CF-Connecting-IP", ip);
    const res = await api(new Request(url, { headers }), c.env, c.executionCtx, c.req.raw);
    if (!res.ok) {
      const body = (await res.json().catch(() => null)) as { error?: { message?: string } } | null;
      return c.html(render(EndedPage({ title: "The export could not start", message: body?.error?.message ?? `The service answered ${res.status}.` })), res.status === 429 ? 429 : 400);
    }
    await record(c, "witness.portal.export_downloaded", { format, date_from: utc(c.req.query("date_from")) ?? null, date_to: utc(c.req.query("date_to")) ?? null });
    return new Response(res.body, res);
  });

  const DONE: Record<string, string> = {
    created: "The stream was created; it sends events from now on.",
    paused: "The stream is paused; nothing is lost, resume to go on from where it stopped.",
    resumed: "The stream delivers again from where it stopped.",
    tested: "A test event (witness.stream.tested) was recorded; the stream delivers it like any event within a few seconds.",
    deleted: "The stream was deleted.",
  };

  const streamsPage = async (c: Context<PortalEnv>, extra: { notice?: string | null; error?: string | null; secret?: string | null } = {}, status: 200 | 400 | 502 = 200) => {
    const s = c.get("session");
    const res = await call<PortalStream[]>(c, "GET", "/v1/streams");
    const streams = res.ok ? res.data : [];
    const error = extra.error ?? (res.ok ? null : res.error.message);
    return c.html(render(StreamsPage({ viewer: viewerOf(s), streams, notice: extra.notice ?? null, error, secret: extra.secret ?? null })), status);
  };

  app.get("/streams", async (c) => {
    return streamsPage(c, { notice: DONE[c.req.query("done") ?? ""] ?? null });
  });

  app.post("/streams", async (c) => {
    const form = await c.req.parseBody();
    const field = (name: string) => (typeof form[name] === "string" ? (form[name] as string).trim() : "");
    const type = field("type");
    // The API checks everything (and forces the organization); the form only shapes the body.
    const body: Record<string, unknown> = { type, format: field("format") || "json" };
    if (type === "s3") {
      body.s3 = {
        endpoint: field("s3_endpoint"),
        bucket: field("s3_bucket"),
        region: field("s3_region"),
        ...(field("s3_prefix") ? { prefix: field("s3_prefix") } : {}),
        access_key_id: field("s3_access_key_id"),
        secret_access_key: field("s3_secret_access_key"),
      };
    } else {
      body.url = field("url");
      if (type !== "webhook") body.token = field("token");
    }
    const res = await call<{ secret?: string }>(c, "POST", "/v1/streams", body);
    if (!res.ok) {
      const issues = (res.error.details?.issues as Array<{ path: string; message: string }> | undefined) ?? [];
      const why = issues.length > 0 ? issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join("; ") : res.error.message;
      return streamsPage(c, { error: `The stream was not created. ${why}` }, 400);
    }
    return streamsPage(c, { notice: DONE.created, secret: res.data.secret ?? null });
  });

  for (const [verb, done] of [["pause", "paused"], ["resume", "resumed"], ["test", "tested"], ["delete", "deleted"]] as const) {
    app.post(`/streams/:id/${verb}`, async (c) => {
      const id = encodeURIComponent(c.req.param("id"));
      const res = verb === "delete" ? await call(c, "DELETE", `/v1/streams/${id}`) : await call(c, "POST", `/v1/streams/${id}/${verb}`);
      if (!res.ok) return streamsPage(c, { error: res.error.message }, res.status === 404 ? 400 : 502);
      return c.redirect(`/portal/streams?done=${done}`, 303);
    });
  }

  return app;
}

/** Mounts the portal on the API's app; it calls the app's own fetch for every /v1 read or change. */
export function mountPortal(app: Hono<AppEnv>): void {
  const pages = portalRoutes((request, env, ctx, page) => {
    // The page's request was counted against the caller's per-IP budget: its first /v1 call is not counted again.
    paidByPage(request, page);
    return app.fetch(request, env, ctx);
  });
  const handle = (c: Context<AppEnv>) => pages.fetch(c.req.raw, c.env, c.executionCtx);
  app.all("/portal", handle);
  app.all("/portal/*", handle);
}
