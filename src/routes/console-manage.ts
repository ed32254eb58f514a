import type { Hono } from "hono";
import { callApi, type ApiFetch } from "../pages/console/console-api";
import { ExportsPage } from "../pages/console/exports-page";
import { IntegrityPage } from "../pages/console/integrity-page";
import type { Job } from "../pages/console/jobs-view";
import { KeysPage } from "../pages/console/keys-page";
import { LacksPage, render } from "../pages/console/layout";
import { RetentionPage } from "../pages/console/retention-page";
import { StreamsPage, type Stream } from "../pages/console/streams-page";
import { hotDays } from "../storage/archive-run";
import { viewerOf, type ConsoleContext, type ConsoleEnv } from "../pages/console/console-env";
import { lacks, form } from "../pages/console/page-guards";

const JOB_ID = /^[0-9a-f-]{36}$/;
const EXPORT_FILTERS = ["organization", "actor_id", "action", "actions", "actions_exclude", "ip_address", "date_from", "date_to"] as const;

/** Integrity, exports, streams, retention and keys: each its own page, each what the API allows the key. */
export function manageRoutes(app: Hono<ConsoleEnv>, api: ApiFetch) {
  const call = (c: ConsoleContext, method: string, path: string, body?: unknown) => callApi(api, c, c.get("session").apiKey, method, path, body);
  const recentJobs = async (c: ConsoleContext, type: Job["type"]) => {
    const res = await call(c, "GET", "/v1/jobs?limit=100");
    return { jobs: res.ok ? (res.data as Job[]).filter((j) => j.type === type).slice(0, 20) : [], error: res.ok ? null : res.error };
  };
  const watched = (c: ConsoleContext) => {
    const id = c.req.query("job");
    return id && JOB_ID.test(id) ? id : null;
  };

  app.get("/integrity", async (c) => {
    const no = lacks(c, "read");
    if (no) return no;
    const [log, jobs] = await Promise.all([call(c, "GET", "/v1/log"), recentJobs(c, "verify")]);
    const page = IntegrityPage({
      viewer: viewerOf(c.get("session")),
      log: log.ok ? log.data : null,
      logError: log.ok ? null : log.error,
      verifies: jobs.jobs,
      jobsError: jobs.error,
      watch: watched(c),
    });
    return c.html(render(page));
  });

  app.post("/integrity/verify", async (c) => {
    const no = lacks(c, "read");
    if (no) return no;
    const res = await call(c, "POST", "/v1/jobs", { type: "verify" });
    if (!res.ok) return c.html(LacksPage({ viewer: viewerOf(c.get("session")), title: "Verify did not start", message: `${res.error.code}: ${res.error.message}` }), 502);
    return c.redirect(`/console/integrity?job=${res.data.id}`, 303);
  });

  app.get("/exports", async (c) => {
    const no = lacks(c, "read");
    if (no) return no;
    const { jobs, error } = await recentJobs(c, "export");
    return c.html(render(ExportsPage({ viewer: viewerOf(c.get("session")), jobs, error, watch: watched(c) })));
  });

  app.post("/exports", async (c) => {
    const no = lacks(c, "read");
    if (no) return no;
    const f = await form(c);
    // Evidence is JSON only: the checkbox decides the format.
    const evidence = f.evidence === "true";
    const body: Record<string, string | boolean> = { type: "export", format: evidence || f.format === "json" ? "json" : "csv", ...(evidence ? { evidence } : {}) };
    for (const name of EXPORT_FILTERS) if (f[name]) body[name] = f[name];
    const res = await call(c, "POST", "/v1/jobs", body);
    if (res.ok) return c.redirect(`/console/exports?job=${res.data.id}`, 303);
    const { jobs } = await recentJobs(c, "export");
    return c.html(render(ExportsPage({ viewer: viewerOf(c.get("session")), jobs, error: res.error, watch: null })), 400);
  });

  const streamsPage = async (c: ConsoleContext, outcome: { error?: any; created?: { id: string; secret?: string } | null; status?: number } = {}) => {
    const list = await call(c, "GET", "/v1/streams");
    const rows = list.ok ? (list.data as Stream[]) : [];
    const detailed = await Promise.all(rows.map(async (s) => ((r) => (r.ok ? (r.data as Stream) : s))(await call(c, "GET", `/v1/streams/${encodeURIComponent(s.id)}`))));
    const page = StreamsPage({ viewer: viewerOf(c.get("session")), streams: detailed, error: outcome.error ?? (list.ok ? null : list.error), created: outcome.created ?? null });
    return c.html(render(page), (outcome.status ?? 200) as 200);
  };
  app.get("/streams", (c) => lacks(c, "read") ?? streamsPage(c));
  app.post("/streams", async (c) => {
    const no = lacks(c, "admin");
    if (no) return no;
    const f = await form(c);
    const filter: Record<string, unknown> = {};
    const actions = (f.actions ?? "").split(",").map((a) => a.trim()).filter(Boolean);
    if (actions.length > 0) filter.actions = actions;
    if (f.organization) filter.organization = f.organization;
    const res = await call(c, "POST", "/v1/streams", { type: f.type, url: f.url, ...(f.token ? { token: f.token } : {}), filter });
    return res.ok ? streamsPage(c, { created: { id: res.data.id, secret: res.data.secret } }) : streamsPage(c, { error: res.error, status: 400 });
  });
  app.post("/streams/:id/replay", async (c) => {
    const no = lacks(c, "admin");
    if (no) return no;
    const f = await form(c);
    const res = await call(c, "POST", `/v1/streams/${encodeURIComponent(c.req.param("id"))}/replay`, { from_seq: Number(f.from_seq) });
    return res.ok ? c.redirect("/console/streams", 303) : streamsPage(c, { error: res.error, status: 400 });
  });
  for (const verb of ["pause", "resume"] as const) {
    app.post(`/streams/:id/${verb}`, async (c) => {
      const no = lacks(c, "admin");
      if (no) return no;
      const res = await call(c, "POST", `/v1/streams/${encodeURIComponent(c.req.param("id"))}/${verb}`);
      return res.ok ? c.redirect("/console/streams", 303) : streamsPage(c, { error: res.error, status: 400 });
    });
  }
  app.post("/streams/:id/delete", async (c) => {
    const no = lacks(c, "admin");
    if (no) return no;
    const res = await call(c, "DELETE", `/v1/streams/${encodeURIComponent(c.req.param("id"))}`);
    return res.ok ? c.redirect("/console/streams", 303) : streamsPage(c, { error: res.error, status: 400 });
  });

  const retentionPage = async (c: ConsoleContext, outcome: { error?: any; saved?: boolean; status?: number } = {}) => {
    const session = c.get("session");
    const [plan, days] = await Promise.all([call(c, "GET", "/v1/retention"), hotDays(c.env, session.projectId)]);
    const page = RetentionPage({ viewer: viewerOf(session), plan: plan.ok ? plan.data : null, hotDays: days, error: outcome.error ?? (plan.ok ? null : plan.error), saved: outcome.saved ?? false });
    return c.html(render(page), (outcome.status ?? 200) as 200);
  };
  app.get("/retention", (c) => lacks(c, "read") ?? retentionPage(c));
  app.post("/retention", async (c) => {
    const no = lacks(c, "admin");
    if (no) return no;
    const f = await form(c);
    const rules = (f.rules ?? "")
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter(Boolean)
      .map((l) => {
        const [pattern, days] = l.split(/\s+/);
        return { pattern, days: /^\d+$/.test(days ?? "") ? Number(days) : (days ?? null) };
      });
    const res = await call(c, "PUT", "/v1/retention", { rules, ...(f.lock === "true" ? { lock: true } : {}) });
    return retentionPage(c, res.ok ? { saved: true } : { error: res.error, status: 400 });
  });

  const keysPage = async (c: ConsoleContext, outcome: { error?: any; created?: { key: string; prefix: string } | null; status?: number } = {}) => {
    const list = await call(c, "GET", "/v1/keys");
    const page = KeysPage({ viewer: viewerOf(c.get("session")), keys: list.ok ? list.data : [], error: outcome.error ?? (list.ok ? null : list.error), created: outcome.created ?? null });
    return c.html(render(page), (outcome.status ?? 200) as 200);
  };
  app.get("/keys", (c) => lacks(c, "admin") ?? keysPage(c));
  app.post("/keys", async (c) => {
    const no = lacks(c, "admin");
    if (no) return no;
    const body = await c.req.parseBody({ all: true });
    const scopes = ([] as unknown[]).concat(body.scopes ?? []).filter((s): s is string => typeof s === "string");
    const text = (v: unknown) => (typeof v === "string" && v.trim() ? v.trim() : undefined);
    const res = await call(c, "POST", "/v1/keys", { scopes, label: text(body.label), expires_at: text(body.expires_at) });
    return res.ok ? keysPage(c, { created: { key: res.data.key, prefix: res.data.prefix } }) : keysPage(c, { error: res.error, status: 400 });
  });
  app.post("/keys/:prefix/revoke", async (c) => {
    const no = lacks(c, "admin");
    if (no) return no;
    const res = await call(c, "DELETE", `/v1/keys/${encodeURIComponent(c.req.param("prefix"))}`);
    return res.ok ? c.redirect("/console/keys", 303) : keysPage(c, { error: res.error, status: 400 });
  });
}
