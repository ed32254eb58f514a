/**
 * src/auth/: who is calling and what they may do. Start here: Credential
 * (this file); API keys (api-keys.ts, key-store.ts, key-audit.ts), scopes
 * (scopes.ts), embed tokens (embed-token.ts), console sessions
 * (console-session.ts), the customers' portal (portal.ts), and the rate budget (rate-cost.ts, rate-lease.ts,
 * project-walk.ts) that src/middleware/ applies per request.
 */
import type { Scope } from "./scopes";
import type { Ability } from "./portal";

/**
 * Who is calling: a project's API key, an embed token (read-only, maybe one
 * organization), or a customer's portal session (one organization, the
 * routes its abilities name: portal.ts).
 */
export type Credential =
  | { kind: "api_key"; projectId: string; prefix: string; scopes: Scope[] }
  | { kind: "embed"; projectId: string; organization: string | null; includeMetadata: boolean }
  | { kind: "portal"; projectId: string; organization: string; abilities: Ability[]; sessionId: string; linkId: string };
