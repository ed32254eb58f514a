import type { Credential } from "../types";

/** Embed tokens arrive with the privacy and embedding work; until then none verifies. */
export async function verifyEmbedToken(_env: Env, _token: string): Promise<Credential | null> {
  return null;
}
