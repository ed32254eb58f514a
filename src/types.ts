import type { RateState } from "./lib/rate-window";
import type { Scope } from "./auth/scopes";

/** Who is calling: a project's API key, or an embed token (read-only, maybe one organization). */
export type Credential =
  | { kind: "api_key"; projectId: string; prefix: string; scopes: Scope[] }
  | { kind: "embed"; projectId: string; organization: string | null; includeMetadata: boolean };

export interface AppEnv {
  Bindings: Env;
  Variables: {
    credential: Credential | null;
    /** Set when the credential could not be accepted; thrown by requireScope. */
    credentialError: string | null;
    rate: RateState | null;
  };
}
