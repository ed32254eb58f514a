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

/** The page practises what the README preaches: the feed works under a strict CSP. */
async function demoCsp(script: boolean): Promise<string> {
  return [
    "default-src 'none'",
    `script-src ${script ? "'self'" : "'none'"}`,
    `connect-src ${script ? "'self'" : "'none'"}`,
    `style-src 'sha256-${await sha256Base64(STYLE)}'`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** A dev-only host page showing <witness-feed> with a token minted for it by the key `minter`. */
export async function demoPage(opts: {
  token: string;
  expiresAt: string;
  baseUrl: string;
  projectId: string;
  organization: string | null;
  minter: { prefix: string; scopes: readonly string[] };
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
<p>Project <code>${opts.projectId}</code>, ${scope}. The embed token was minted from the key <code>${opts.minter.prefix}</code> (${opts.minter.scopes.join(", ")}), the project's newest that can read, and expires at ${opts.expiresAt}; reload for a fresh one.</p>
<witness-feed token="${opts.token}" base-url="${opts.baseUrl}"></witness-feed>
</main>
</body>
</html>`;
  return { html: page.toString(), csp: await demoCsp(true) };
}

/**
 * The demo page when the project has no live key that can read: an embed
 * token reads with its minting key's rights, so a token minted from an
 * ingest-only key would only fail in the feed. Says so, and how to make one.
 */
export async function demoNoReaderPage(projectId: string): Promise<DemoPage> {
  const page = await html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>witness-feed demo: no key can read</title>
<style>${raw(STYLE)}</style>
</head>
<body>
<main>
<h1>witness-feed demo</h1>
<p>Project <code>${projectId}</code> has no live API key that can read events (scope <code>read</code> or <code>admin</code>), so this page cannot mint a token for the feed: an embed token reads with the rights of the key that minted it, and an <code>ingest</code> key can only add events.</p>
<p>Create a key that can read, then reload this page:</p>
<pre><code>npm run keys:create -- ${projectId} --scope read --label "feed demo"</code></pre>
</main>
</body>
</html>`;
  return { html: page.toString(), csp: await demoCsp(false) };
}
