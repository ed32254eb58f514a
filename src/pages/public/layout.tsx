import type { Context } from "hono";
import type { Child } from "hono/jsx";

/** Where the Worker serves the public pages' assets (src/routes/public-pages.ts). */
export const PUBLIC_ASSETS = "/assets/public";
export const PUBLIC_CSS_PATH = `${PUBLIC_ASSETS}/site.css`;
export const CHECK_JS_PATH = `${PUBLIC_ASSETS}/check.js`;

/** The signed-in console (src/pages/console), the API reference and the receipt check. */
const NAV: Array<[string, string]> = [
  ["/console", "Console"],
  ["/docs", "API reference"],
  ["/receipts", "Check a receipt"],
];

export interface PageProps {
  title: string;
  /** Script paths of this Worker, loaded as deferred classic scripts. */
  scripts?: string[];
  narrow?: boolean;
  /**
   * same-origin for pages that POST forms to this Worker (the customer portal): with
   * no-referrer, browsers send Origin: null on a POST, which a same-origin check must refuse.
   */
  referrer?: "no-referrer" | "same-origin";
  /** The header's bar in place of the site's brand and navigation (the customer portal's, which links nowhere else). */
  bar?: Child;
  footer?: Child;
  children: Child;
}

/** Every public page: one stylesheet, no inline script or style, a skip link and the site's navigation. */
export function Page(props: PageProps) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content={props.referrer ?? "no-referrer"} />
        <title>{props.title}</title>
        <link rel="icon" href="data:," />
        <link rel="stylesheet" href={PUBLIC_CSS_PATH} />
        {(props.scripts ?? []).map((src) => (
          <script src={src} defer></script>
        ))}
      </head>
      <body>
        <a class="skip-link" href="#main">
          Skip to content
        </a>
        <header class="site">
          <div class="bar">
            {props.bar ?? (
              <>
                <a class="brand" href="/">
                  Witness
                </a>
                <nav aria-label="Site">
                  <ul>
                    {NAV.map(([href, label]) => (
                      <li>
                        <a href={href}>{label}</a>
                      </li>
                    ))}
                  </ul>
                </nav>
              </>
            )}
          </div>
        </header>
        <main id="main" class={props.narrow ? "narrow" : undefined}>
          {props.children}
        </main>
        {props.footer}
      </body>
    </html>
  );
}

export function render(page: unknown): string {
  return `<!doctype html>${page}`;
}

/**
 * Strict CSP: nothing inline, everything from this Worker; scripts and
 * fetches only where a page names them. Pages are never framed.
 */
export function publicCsp(options: { script?: boolean; connect?: boolean; forms?: boolean } = {}): string {
  return [
    "default-src 'none'",
    `script-src ${options.script ? "'self'" : "'none'"}`,
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src ${options.connect ? "'self'" : "'none'"}`,
    "base-uri 'none'",
    `form-action ${options.forms ? "'self'" : "'none'"}`,
    "frame-ancestors 'none'",
  ].join("; ");
}

/** An HTML answer with the public pages' headers; `Vary: Accept` where the same URL also answers data. */
export function htmlResponse(
  c: Context,
  html: string,
  options: { status?: 200 | 404 | 410 | 503; script?: boolean; connect?: boolean; negotiated?: boolean; cache?: string } = {},
): Response {
  const headers: Record<string, string> = {
    "Content-Security-Policy": publicCsp(options),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": options.cache ?? "no-store",
  };
  if (options.negotiated) headers.Vary = "Accept";
  return c.html(html, options.status ?? 200, headers);
}
