/**
 * Whether a request asks for a page rather than data. Browsers put text/html
 * first in Accept; curl, fetch() and API clients send *\/* or
 * application/json, and must keep getting exactly what they got before the
 * pages existed. A tie goes to JSON, so only an explicit preference for HTML
 * changes the answer.
 */
export function wantsHtml(accept: string | undefined | null): boolean {
  if (!accept) return false;
  let html = 0;
  let json = 0;
  for (const part of accept.split(",")) {
    const [type, ...params] = part.split(";").map((s) => s.trim().toLowerCase());
    const q = params.find((p) => p.startsWith("q="));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    if (!(weight >= 0 && weight <= 1)) continue;
    if (type === "text/html" || type === "application/xhtml+xml") html = Math.max(html, weight);
    else if (type === "application/json") json = Math.max(json, weight);
  }
  return html > 0 && html > json;
}
