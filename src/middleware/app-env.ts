import type { EmbedRefusal } from "../auth/embed-token";
import type { RateState } from "../lib/rate-window";
import type { Credential } from "../auth/credential";

/** The Hono environment of every route: the bindings, and what the middleware learned of the caller. */
export interface AppEnv {
  Bindings: Env;
  Variables: {
    credential: Credential | null;
    /** Set when the credential could not be accepted; thrown by requireScope. */
    credentialError: { message: string; reason?: EmbedRefusal } | null;
    rate: RateState | null;
  };
}
