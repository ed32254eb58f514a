// Shared by the browser tests; run.mjs provides the environment.
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

export const WITNESS = process.env.WITNESS_URL;
export const API_KEY = process.env.WITNESS_API_KEY;
export const DEMO_API_KEY = process.env.WITNESS_DEMO_API_KEY;
const EMBED_SECRET = process.env.WITNESS_EMBED_TOKEN_SECRET;
if (!WITNESS || !API_KEY || !EMBED_SECRET) throw new Error("run the browser tests with npm run test:browser");

/** Host pages live on another origin than the service, as on a customer's site. */
export const HOST_PORT = 8804;
export const HOST = `http://localhost:${HOST_PORT}`;

export async function launchBrowser() {
  const profile = mkdtempSync(join(tmpdir(), "witness-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    viewport: { width: 900, height: 900 },
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
  // Runs before any page script and is exempt from the page's CSP: records violations.
  await context.addInitScript(() => {
    window.__violations = [];
    document.addEventListener("securitypolicyviolation", (e) => window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** A tiny web server for host pages: each test registers the page it needs. */
export async function startHost() {
  const pages = new Map();
  const server = createServer((req, res) => {
    const page = pages.get(req.url);
    if (!page) return res.writeHead(404).end();
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8", ...page.headers }).end(page.html);
  });
  await new Promise((resolve) => server.listen(HOST_PORT, "127.0.0.1", resolve));
  let n = 0;
  return {
    page(html, headers = {}) {
      const path = `/page-${++n}`;
      pages.set(path, { html, headers });
      return `${HOST}${path}`;
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

export const sha256Base64 = (text) => createHash("sha256").update(text).digest("base64");

export function feedPage({ token, pageSize = 5, style = "", extraHead = "" }) {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Host app</title>
${style ? `<style>${style}</style>` : ""}
<script src="${WITNESS}/embed/feed.js"></script>${extraHead}
</head><body>
<h1>Acme admin</h1>
<witness-feed token="${token}" base-url="${WITNESS}/v1" page-size="${pageSize}"></witness-feed>
</body></html>`;
}

export async function api(method, path, body, key = API_KEY) {
  const res = await fetch(`${WITNESS}${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

/** Events in the order given get increasing occurred_at, so the feed (newest first) shows them reversed. */
export async function ingest(events, key = API_KEY) {
  const start = Date.now() - 3_600_000;
  const stamped = events.map((e, i) => ({ occurred_at: new Date(start + i * 60_000).toISOString(), ...e }));
  const out = [];
  for (let i = 0; i < stamped.length; i += 100) out.push(...(await api("POST", "/v1/events/batch", { events: stamped.slice(i, i + 100) }, key)));
  return out;
}

export async function embedToken(body = {}, key = API_KEY) {
  return (await api("POST", "/v1/embed/token", body, key)).token;
}

/** A genuine token, signed with the service's secret, whose lifetime ended a minute ago. */
export function expiredToken(organization) {
  const b64 = (v) => Buffer.from(JSON.stringify(v)).toString("base64url");
  const now = Math.floor(Date.now() / 1000);
  const claims = { aud: "witness:embed", sub: "browser", key: API_KEY.split("_")[2], org: organization, iat: now - 960, exp: now - 60 };
  const unsigned = `${b64({ alg: "HS256", typ: "JWT" })}.${b64(claims)}`;
  return `${unsigned}.${createHmac("sha256", EMBED_SECRET).update(unsigned).digest("base64url")}`;
}

/** Waits until the feed settles in a state other than loading. */
export async function feedState(page) {
  await page.waitForFunction(() => {
    const state = document.querySelector("witness-feed")?.shadowRoot?.querySelector("section")?.getAttribute("data-state");
    return state && state !== "loading";
  });
  return page.evaluate(() => document.querySelector("witness-feed").shadowRoot.querySelector("section").getAttribute("data-state"));
}

export const actions = (page) => page.locator("witness-feed li .action").allTextContents();

/** Waits (up to the default timeout) until the feed lists exactly these actions, then checks them. */
export async function expectActions(page, expected) {
  await page
    .waitForFunction(
      (want) => JSON.stringify([...document.querySelector("witness-feed").shadowRoot.querySelectorAll("li .action")].map((n) => n.textContent)) === want,
      JSON.stringify(expected),
      { timeout: 5000 },
    )
    .catch(() => {});
  assert.deepEqual(await actions(page), expected);
}

export const unique = (label) => `${label}-${Math.random().toString(36).slice(2, 8)}`;

/** Screenshots land here (git-ignored), kept as the run's artifacts. */
export const ARTIFACTS = new URL("./artifacts/", import.meta.url).pathname;
const AXE = readFileSync(new URL("../../node_modules/axe-core/axe.min.js", import.meta.url), "utf8");

/** axe-core run in the page (evaluate is not subject to the page's CSP, an injected script tag would be); no serious or critical violation. */
export async function expectAccessible(page, what) {
  await page.evaluate(AXE);
  const violations = await page.evaluate(async () => (await window.axe.run(document, { resultTypes: ["violations"] })).violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`));
  assert.deepEqual(violations, [], `${what}: axe-core violations`);
}

/** Screenshots at 390 and 1280 px as ARTIFACTS/<name>-<width>.png; at 390 the page must not scroll sideways. Leaves it at 1280. */
export async function screenshots(page, name) {
  mkdirSync(ARTIFACTS, { recursive: true });
  for (const width of [390, 1280]) {
    await page.setViewportSize({ width, height: 900 });
    // Let resize observers (the console's chart) run before measuring.
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    if (width === 390) {
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(overflow <= 0, `${name} scrolls sideways at 390 px by ${overflow} px`);
    }
    await page.screenshot({ path: `${ARTIFACTS}${name}-${width}.png`, fullPage: true });
  }
}

/**
 * The console's layout at a phone's widths (360 and 390 px) and a desktop's: the page never scrolls sideways
 * (a wide table scrolls in its own box), and no badge, button or column header wraps onto a second
 * line (so none breaks inside a word). Leaves the viewport at 1280 px.
 */
export async function expectUnbroken(page, name, widths = [360, 390, 1280]) {
  for (const width of widths) {
    await page.setViewportSize({ width, height: 900 });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const found = await page.evaluate(() => {
      const wide = document.documentElement.scrollWidth > innerWidth ? [`the page is ${document.documentElement.scrollWidth} px wide`] : [];
      const wrapped = [...document.querySelectorAll(".badge, button, th")].flatMap((el) => {
        const box = el.getBoundingClientRect();
        if (box.width === 0) return [];
        const s = getComputedStyle(el);
        const line = parseFloat(s.lineHeight) || parseFloat(s.fontSize) * 1.5;
        const frame = ["paddingTop", "paddingBottom", "borderTopWidth", "borderBottomWidth"].reduce((sum, p) => sum + parseFloat(s[p]), 0);
        return box.height > frame + line * 1.5 ? [`${el.tagName.toLowerCase()} "${el.textContent.trim().slice(0, 40)}" wraps (${Math.round(box.height)} px high)`] : [];
      });
      return [...wide, ...wrapped];
    });
    assert.deepEqual(found, [], `${name} at ${width} px`);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}
