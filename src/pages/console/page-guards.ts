import { grants, type Scope } from "../../auth/scopes";
import type { ApiResult } from "./console-api";
import { viewerOf, type ConsoleContext } from "./console-env";
import { LacksPage } from "./layout";

/** What every console route file needs around its pages: the scope check, a form's fields, the status of an API refusal. */

/** The page a key lacking `scope` gets instead (null: it may see it). */
export function lacks(c: ConsoleContext, scope: Scope) {
  const session = c.get("session");
  return grants(session.scopes, scope) ? null : c.html(LacksPage({ viewer: viewerOf(session), scope }), 403);
}

/** A posted form's text fields (files are never accepted). */
export async function form(c: ConsoleContext): Promise<Record<string, string>> {
  const body = await c.req.parseBody();
  return Object.fromEntries(Object.entries(body).filter(([, v]) => typeof v === "string")) as Record<string, string>;
}

/** The page's status for an API refusal: the caller's mistake stays a 4xx, anything else is the API failing us. */
export const statusOf = (res: ApiResult<unknown> | null) => (!res || res.ok ? 200 : res.status === 400 || res.status === 404 ? res.status : 502);
