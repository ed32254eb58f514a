import type { Context } from "hono";
import type { ConsoleSession } from "../../auth/console-session";
import type { AppEnv } from "../../middleware/app-env";
import type { Viewer } from "./layout";

/** The console's Hono environment: the API's, plus the signed-in session every page reads. */
export type ConsoleEnv = { Bindings: Env; Variables: AppEnv["Variables"] & { session: ConsoleSession } };
export type ConsoleContext = Context<ConsoleEnv>;

/** What a page shows of the session (never its API key). */
export const viewerOf = (s: ConsoleSession): Viewer => ({ projectId: s.projectId, keyPrefix: s.keyPrefix, scopes: s.scopes, csrf: s.csrf, expiresAt: s.expiresAt });
