/**
 * One `Range: bytes=...` of a file of `size` bytes (RFC 9110 14.1.2): a
 * closed range, an open-ended one, or a suffix. Null: no Range, or one this
 * server ignores (several ranges, another unit), so the whole file is sent.
 * "unsatisfiable": 416.
 */
export function parseRange(header: string | null | undefined, size: number): { offset: number; length: number } | null | "unsatisfiable" {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return null;
  if (m[1] === "") {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return "unsatisfiable";
    const length = Math.min(suffix, size);
    return { offset: size - length, length };
  }
  const first = Number(m[1]);
  const last = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (first >= size || last < first) return "unsatisfiable";
  return { offset: first, length: last - first + 1 };
}
