import { exports } from "cloudflare:workers";
import { BASE } from "../helpers";

export const ORIGIN = BASE;

/** A browser-like request to the console: same-origin POSTs carry Origin, as browsers send it. */
export async function consoleFetch(path: string, init: { method?: string; cookie?: string | null; form?: Record<string, string | string[]>; origin?: string | null; headers?: Record<string, string>; body?: string } = {}) {
  const method = init.method ?? (init.form ? "POST" : "GET");
  const headers: Record<string, string> = { "CF-Connecting-IP": `10.9.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`, ...init.headers };
  if (init.cookie) headers.Cookie = init.cookie;
  if (method !== "GET" && init.origin !== null) headers.Origin = init.origin ?? ORIGIN;
  let body: string | undefined = init.body;
  if (init.form) {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(init.form)) for (const one of ([] as string[]).concat(v)) params.append(k, one);
    body = params.toString();
    headers["Content-Type"] = "application/x-www-form-urlencoded";
  }
  const res = await exports.default.fetch(new Request(`${ORIGIN}${path}`, { method, headers, body, redirect: "manual" }));
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** Signs in with the key; the session cookie as a Cookie header value, the raw Set-Cookie and the page's CSRF token. */
export async function signIn(key: string) {
  const res = await consoleFetch("/console/sign-in", { form: { api_key: key } });
  if (res.status !== 303) throw new Error(`sign-in answered ${res.status}: ${res.text.slice(0, 300)}`);
  const setCookie = res.headers.get("Set-Cookie") ?? "";
  const cookie = setCookie.split(";")[0];
  const page = await consoleFetch("/console/events", { cookie });
  const csrf = /<meta name="csrf-token" content="([^"]+)"/.exec(page.text)?.[1] ?? "";
  return { cookie, setCookie, csrf };
}
