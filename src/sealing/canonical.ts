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
    // Loops that append to one string rather than map/filter/join: ingest canonicalizes every event's metadata and targets.
    case "object": {
      if (Array.isArray(value)) {
        let out = "[";
        for (let i = 0; i < value.length; i++) out += (i === 0 ? "" : ",") + canonicalize(value[i]);
        return `${out}]`;
      }
      const obj = value as Record<string, unknown>;
      // Default sort compares UTF-16 code units, which is the order RFC 8785 asks for.
      const keys = Object.keys(obj).sort();
      let out = "{";
      for (const k of keys) {
        const v = obj[k];
        if (v === undefined) continue;
        out += `${out.length === 1 ? "" : ","}${JSON.stringify(k)}:${canonicalize(v)}`;
      }
      return `${out}}`;
    }
    default:
      throw new TypeError(`JCS cannot encode a ${typeof value}`);
  }
}
