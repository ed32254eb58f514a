import { sign, verify } from "hono/jwt";
import type { Credential } from "./credential";
import { findKey } from "./api-keys";
import { grants, parseStoredScopes } from "./scopes";

/** Bounds of ttl_seconds; a token shorter than a minute is more likely a unit mistake than a wish. */
export const EMBED_TTL = { min: 60, default: 900, max: 3600 } as const;

/** Audience claim: a JWT signed with the same secret for another purpose is not an embed token. */
const AUDIENCE = "witness:embed";

export interface EmbedGrant {
  projectId: string;
  /** Prefix of the API key that minted the token: revoking that key revokes its tokens. */
  keyPrefix: string;
  organization: string | null;
  /** Events read with the token carry their metadata; false when absent (see reducedEventJson). */
  includeMetadata?: boolean;
}

function secretOf(env: Env): string | null {
  return env.EMBED_TOKEN_SECRET ? env.EMBED_TOKEN_SECRET : null;
}

/**
 * HS256 JWT bound to one project, the minting key and (optionally) one
 * organization. `meta` is signed with the rest, so a holder cannot widen
 * what the token reads.
 */
export async function mintEmbedToken(env: Env, grant: EmbedGrant, ttlSeconds: number, now = Date.now()) {
  const secret = secretOf(env);
  if (!secret) throw new Error("EMBED_TOKEN_SECRET is not set");
  const iat = Math.floor(now / 1000);
  const exp = iat + ttlSeconds;
  const token = await sign(
    {
      aud: AUDIENCE,
      sub: grant.projectId,
      key: grant.keyPrefix,
      org: grant.organization,
      meta: grant.includeMetadata === true,
      iat,
      exp,
    },
    secret,
    "HS256",
  );
  return { token, expiresAt: new Date(exp * 1000).toISOString() };
}

/**
 * The credential an embed token stands for, or null when it is expired, tampered,
 * signed with another secret, or its minting key was revoked or moved project.
 */
/** Why an embed token was refused, for the feed to say (details.reason of the 401). */
export type EmbedRefusal = "expired" | "invalid" | "key_revoked" | "key_expired" | "key_cannot_read";

export async function verifyEmbedToken(env: Env, token: string): Promise<Credential | { refused: EmbedRefusal } | null> {
  const secret = secretOf(env);
  // Not shaped like a token at all (header.payload.signature): nothing to say about it beyond "not valid".
  if (!secret || token.split(".").length !== 3) return null;
  let claims: Record<string, unknown>;
  try {
    // The signature first, then the time: a forged or altered token is "invalid" whatever its exp says.
    claims = await verify(token, secret, { alg: "HS256", aud: AUDIENCE, exp: false });
  } catch {
    return { refused: "invalid" };
  }
  const { sub, key, org, meta, exp } = claims;
  // A token without exp must not live forever.
  if (typeof exp !== "number" || typeof sub !== "string" || typeof key !== "string") return { refused: "invalid" };
  if (org !== null && typeof org !== "string") return { refused: "invalid" };
  if (exp <= Math.floor(Date.now() / 1000)) return { refused: "expired" };
  // Revoking the minting key revokes its tokens (as fast as the key itself: see findKey).
  const minter = await findKey(env, key);
  if (!minter || minter.project_id !== sub) return { refused: "invalid" };
  if (minter.revoked_at) return { refused: "key_revoked" };
  // A token reads no more than its minting key may: an expired key, or one without read, mints nothing that works.
  if (minter.expires_at !== null && minter.expires_at <= new Date().toISOString()) return { refused: "key_expired" };
  if (!grants(parseStoredScopes(minter.scopes), "read")) return { refused: "key_cannot_read" };
  // Tokens minted before the claim existed read without metadata.
  return { kind: "embed", projectId: sub, organization: org, includeMetadata: meta === true };
}
