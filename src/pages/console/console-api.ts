import type { Context } from "hono";

/** The Worker's own fetch: the console calls the public API in-process, as the signed-in key; `page` is the browser's request it serves. */
export type ApiFetch = (request: Request, env: Env, ctx: Context["executionCtx"], page: Request) => Response | Promise<Response>;

export interface ApiError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

export type ApiResult<T> = { ok: true; status: number; data: T; body: any } | { ok: false; status: number; error: ApiError };

/**
 * One call to /v1 as the session's key: the same validation, scopes and
 * answers a client gets, so the console never reads around the API. The
 * caller's address goes along, so the per-IP limit still applies to it (the
 * page's own unit pays for its first call: see paidByPage).
 */
export async function callApi<T = any>(
  fetcher: ApiFetch,
  c: Context<any>,
  apiKey: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<ApiResult<T>> {
  const headers: Record<string, string> = { Authorization: `Bearer ${apiKey}` };
  const ip = c.req.header("CF-Connecting-IP");
  if (ip) headers["CF-Connecting-IP"] = ip;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const url = new URL(path, new URL(c.req.url).origin);
  const res = await fetcher(new Request(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }), c.env, c.executionCtx, c.req.raw);
  const text = await res.text();
  let json: any = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (res.ok) return { ok: true, status: res.status, data: json?.data as T, body: json };
  return { ok: false, status: res.status, error: json?.error ?? { code: "HTTP_ERROR", message: `The API answered ${res.status}` } };
}

/** Query text from chosen parameters, blanks left out. */
export function queryOf(params: Record<string, string | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
  const text = q.toString();
  return text ? `?${text}` : "";
}
