import { html, raw } from "hono/html";
import { sha256Base64 } from "./digest";

/** Themes the feed through its custom properties, as a host page would. */
const STYLE = `
body { margin: 0; font: 15px/1.5 system-ui, sans-serif; background: #f6f8fa; color: #1f2328; }
main { max-width: 44rem; margin: 2rem auto; padding: 0 1rem; }
h1 { font-size: 1.4rem; margin: 0 0 .25rem; }
p { color: #57606a; margin: 0 0 1.25rem; }
code { font-size: .9em; }
witness-feed { --witness-accent: #6639ba; --witness-radius: 10px; --witness-border: #d8dee4; }
`;

export interface DemoPage {
  html: string;
  csp: string;
}

/** A dev-only host page showing <witness-feed> with a token minted for it. */
export async function demoPage(opts: {
  token: string;
  expiresAt: string;
  baseUrl: string;
  projectId: string;
  organization: string | null;
}): Promise<DemoPage> {
  const scope = opts.organization ? html`organization <code>${opts.organization}</code>` : html`all organizations`;
  const page = await html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>witness-feed demo</title>
<style>${raw(STYLE)}</style>
<script src="/embed/feed.js" defer></script>
</head>
<body>
<main>
<h1>witness-feed demo</h1>
<p>Project <code>${opts.projectId}</code>, ${scope}. The embed token expires at ${opts.expiresAt}; reload for a fresh one.</p>
<witness-feed token="${opts.token}" base-url="${opts.baseUrl}"></witness-feed>
</main>
</body>
</html>`;
  // The page practises what the README preaches: the feed works under a strict CSP.
  const csp = [
    "default-src 'none'",
    "script-src 'self'",
    "connect-src 'self'",
    `style-src 'sha256-${await sha256Base64(STYLE)}'`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
  return { html: page.toString(), csp };
}
