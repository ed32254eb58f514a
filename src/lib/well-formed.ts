/**
 * Unpaired UTF-16 surrogates. JSON can carry one (`"\ud83d"`, a name cut
 * mid-emoji), but UTF-8 cannot: D1 would store U+FFFD instead, and the row
 * would no longer match the hash taken of what was sent. Ingest refuses them.
 */

/** With the u flag a surrogate class matches only code units that are not half of a pair. */
const LONE = /[\uD800-\uDFFF]/u;
/** How JSON.stringify writes a lone surrogate; a pair is written as the character itself. */
const ESCAPED = /\\u[dD][89a-fA-F][0-9a-fA-F]{2}/;

export function hasLoneSurrogate(text: string): boolean {
  return LONE.test(text);
}

/**
 * The path of the first string (or object key) in a JSON value holding an
 * unpaired surrogate, or null. `json` is the value's JSON.stringify text:
 * only when it shows such an escape is the value walked.
 */
export function loneSurrogatePath(value: unknown, json: string, path: string): string | null {
  return ESCAPED.test(json) ? walk(value, path) : null;
}

function walk(value: unknown, path: string): string | null {
  if (typeof value === "string") return hasLoneSurrogate(value) ? path : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = walk(value[i], `${path}.${i}`);
      if (found) return found;
    }
    return null;
  }
  if (value !== null && typeof value === "object") {
    for (const [key, inner] of Object.entries(value)) {
      if (hasLoneSurrogate(key)) return `${path} (key ${JSON.stringify(key)})`;
      const found = walk(inner, `${path}.${key}`);
      if (found) return found;
    }
  }
  return null;
}
