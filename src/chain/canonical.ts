/**
 * RFC 8785 (JSON Canonicalization Scheme). Third parties must be able to
 * recompute our hashes byte for byte, so this follows the RFC rather than
 * relying on JSON.stringify key order.
 */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export function canonicalize(value: unknown): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw new TypeError("JCS cannot encode a non-finite number");
      // ES number serialization is exactly what RFC 8785 prescribes (-0 becomes 0).
      return Object.is(value, -0) ? "0" : String(value);
    case "string":
      // JSON.stringify escapes exactly the characters RFC 8785 requires.
      return JSON.stringify(value);
    case "object": {
      if (Array.isArray(value)) return `[${value.map(canonicalize).join(",")}]`;
      const obj = value as Record<string, unknown>;
      // Default sort compares UTF-16 code units, which is the order RFC 8785 asks for.
      const keys = Object.keys(obj)
        .filter((k) => obj[k] !== undefined)
        .sort();
      return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalize(obj[k])}`).join(",")}}`;
    }
    default:
      throw new TypeError(`JCS cannot encode a ${typeof value}`);
  }
}
