import type { Hono } from "hono";
import { callApi, queryOf, type ApiError, type ApiFetch, type ApiResult } from "../pages/console/console-api";
import { viewerOf, type ConsoleContext, type ConsoleEnv } from "../pages/console/console-env";
import { LacksPage, render } from "../pages/console/layout";
import { lacks, statusOf } from "../pages/console/page-guards";
import { InvestigatePage, MissingPage, type ErasureState, type InvestigateProps } from "../pages/console/investigate/investigate-page";
import { filtersOf, storable, type Erasure, type InvEvent, type Kind, type Subject } from "../pages/console/investigate/investigate-view";

/** Rows of the events table per page. */
const PAGE_ROWS = "50";
/** The chart and the lists count at most this many of the newest events (SAMPLE_PAGES pages of the list's largest page). */
const SAMPLE_PAGES = 5;
const SAMPLE_LIMIT = 200;
const KINDS: Kind[] = ["actor", "organization", "target"];

/** The subject the address names, or which of its parameters are missing (blank counts as missing: ids are never empty). */
function subjectOf(c: ConsoleContext, kind: Kind): { subject: Subject } | { missing: ("type" | "id")[]; values: { type?: string; id?: string } } {
  const id = c.req.query("id") ?? "";
  if (kind !== "target") return id ? { subject: { kind, id } } : { missing: ["id"], values: {} };
  const type = c.req.query("type") ?? "";
  if (type && id) return { subject: { kind, type, id } };
  return { missing: [...(type ? [] : ["type" as const]), ...(id ? [] : ["id" as const])], values: { type, id } };
}

/**
 * The investigation pages: /console/actor?id=, /console/organization?id= and
 * /console/target?type=&id= (everything one actor did, everything in one
 * organization, everything naming one target), each with a download of those
 * events at /console/<kind>/export. Query parameters, not path segments,
 * carry the ids, so any id (slashes included) names its page.
 */
export function investigateRoutes(app: Hono<ConsoleEnv>, api: ApiFetch) {
  const call = <T = any>(c: ConsoleContext, path: string) => callApi<T>(api, c, c.get("session").apiKey, "GET", path);

  /** The subject's newest events, up to SAMPLE_PAGES pages: what the chart and the lists count (no rollup counts per actor). */
  const sampleOf = async (c: ConsoleContext, filters: Record<string, string>): Promise<InvestigateProps["sample"]> => {
    const events: InvEvent[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < SAMPLE_PAGES; page++) {
      const res: ApiResult<InvEvent[]> = await call<InvEvent[]>(c, `/v1/events${queryOf({ ...filters, limit: String(SAMPLE_LIMIT), cursor })}`);
      if (!res.ok) return { error: res.error };
      events.push(...res.data);
      cursor = res.body.nextCursor ?? null;
      if (cursor === null) return { events, complete: true };
    }
    return { events, complete: false };
  };

  const erasureOf = async (c: ConsoleContext, id: string): Promise<ErasureState> => {
    const res = await call<Erasure[]>(c, `/v1/actors/${encodeURIComponent(id)}/erasures`);
    return res.ok ? { ok: true, erasures: res.data } : { ok: false, error: res.error };
  };

  const page = async (c: ConsoleContext, kind: Kind) => {
    const no = lacks(c, "read");
    if (no) return no;
    const viewer = viewerOf(c.get("session"));
    const asked = subjectOf(c, kind);
    if ("missing" in asked) return c.html(render(MissingPage({ viewer, kind, ...asked })), 400);
    const { subject } = asked;
    const cursor = c.req.query("cursor") || null;
    const base = { viewer, subject, now: Date.now(), cursor, nextCursor: null, error: null };
    if (!storable(subject)) {
      return c.html(render(InvestigatePage({ ...base, rows: [], sample: null, erasure: null, overlong: true })));
    }
    const filters = filtersOf(subject);
    const [list, sample, erasure] = await Promise.all([
      call<InvEvent[]>(c, `/v1/events${queryOf({ ...filters, limit: PAGE_ROWS, cursor })}`),
      sampleOf(c, filters),
      subject.kind === "actor" ? erasureOf(c, subject.id) : Promise.resolve(null),
    ]);
    const props: InvestigateProps = {
      ...base,
      rows: list.ok ? list.data : [],
      nextCursor: list.ok ? (list.body.nextCursor ?? null) : null,
      sample,
      erasure,
      error: list.ok ? null : list.error,
      overlong: false,
    };
    return c.html(render(InvestigatePage(props)), statusOf(list) as 200);
  };

  /** The subject's events as one download: GET /v1/exports streamed through as the session's key, named after the subject. */
  const download = async (c: ConsoleContext, kind: Kind) => {
    const no = lacks(c, "read");
    if (no) return no;
    const viewer = viewerOf(c.get("session"));
    const asked = subjectOf(c, kind);
    if ("missing" in asked) return c.html(render(MissingPage({ viewer, kind, ...asked })), 400);
    const { subject } = asked;
    const format = c.req.query("format") || "csv";
    const url = new URL(`/v1/exports${queryOf({ ...filtersOf(subject), format })}`, new URL(c.req.url).origin);
    const headers = new Headers({ Authorization: `Bearer ${c.get("session").apiKey}` });
    const ip = c.req.header("CF-Connecting-IP");
    if (ip) headers.set("CF-Connecting-IP", ip);
    const res = await api(new Request(url, { headers }), c.env, c.executionCtx, c.req.raw);
    if (!res.ok) {
      const error: ApiError = ((await res.json().catch(() => null)) as { error?: ApiError } | null)?.error ?? { code: "HTTP_ERROR", message: `The API answered ${res.status}` };
      const status = res.status === 400 || res.status === 429 ? res.status : 502;
      return c.html(LacksPage({ viewer, title: "Cannot export these events", message: `${error.code}: ${error.message}` }), status);
    }
    const out = new Headers(res.headers);
    const named = /filename="([^"]+?)(\.[a-z]+)"/.exec(res.headers.get("Content-Disposition") ?? "");
    if (named) out.set("Content-Disposition", `attachment; filename="${named[1]}-${fileSlug(subject)}${named[2]}"`);
    return new Response(res.body, { status: res.status, headers: out });
  };

  for (const kind of KINDS) {
    app.get(`/${kind}`, (c) => page(c, kind));
    app.get(`/${kind}/export`, (c) => download(c, kind));
  }
}

/** What the download's file name says of the subject: a file name keeps only safe characters. */
function fileSlug(s: Subject): string {
  const safe = (v: string) => v.replace(/[^A-Za-z0-9._-]+/g, "_").slice(0, 60);
  return s.kind === "target" ? `target-${safe(s.type)}-${safe(s.id)}` : `${s.kind}-${safe(s.id)}`;
}
