import type { Scope } from "./scopes";

/** Who is calling: a project's API key, or an embed token (read-only, maybe one organization). */
export type Credential =
  | { kind: "api_key"; projectId: string; prefix: string; scopes: Scope[] }
  | { kind: "embed"; projectId: string; organization: string | null; includeMetadata: boolean };
