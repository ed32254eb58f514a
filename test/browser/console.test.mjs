import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { after, before, describe, it } from "node:test";
import { API_KEY, ingest, launchBrowser, unique, WITNESS } from "./support.mjs";

const ROOT = new URL("../..", import.meta.url).pathname;
const ARTIFACTS = join(ROOT, "test", "browser", "artifacts");
const AXE = readFileSync(join(ROOT, "node_modules", "axe-core", "axe.min.js"), "utf8");
const HOSTILE = `<img src=x onerror="window.__pwned=1">`;

let browser;
let page;
let tag;
let stored;

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  browser = await launchBrowser();
  tag = unique("console");
  stored = await ingest([
    { action: `${tag}.login`, actor: { id: "u1", name: HOSTILE } },
    { action: `${tag}.paid`, organization: "acme", metadata: { note: HOSTILE } },
    { action: `${tag}.login`, actor: { id: "u2", name: "Bo" } },
  ]);
  page = await browser.context.newPage();
  page.on("pageerror", (e) => assert.fail(`page error: ${e.message}`));
});

after(async () => {
  await browser?.close();
});

/** axe-core run in the page (evaluate is not subject to the page's CSP, an injected script tag would be); no serious or critical violation. */
async function accessible(name) {
  await page.evaluate(AXE);
  const violations = await page.evaluate(async () => (await window.axe.run(document)).violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")) })));
  const serious = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(serious, [], `${name}: ${JSON.stringify(serious)}`);
}

async function screenshots(name) {
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.screenshot({ path: join(ARTIFACTS, `console-${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

const actionsShown = () => page.locator("table.events a.action").allTextContents();

describe("the web console", () => {
  it("signs in with a key; the events page filters from the keyboard, charts from rollups, and loads little script", async () => {
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${WITNESS}/console`);
    assert.match(page.url(), /\/console\/sign-in$/);
    await accessible("sign-in");
    await screenshots("sign-in");
    await page.getByLabel("API key").fill(API_KEY);
    await page.getByLabel("API key").press("Enter");
    await page.waitForURL(/\/console\/events$/);
    await page.locator("#activity-status").filter({ hasText: /events from/ }).waitFor();
    assert.equal(await page.locator("#activity-plot canvas").count(), 1);

    // Keyboard only: Tab to the exact-action filter, type, Enter; then Tab to the first row and open it.
    await page.locator("body").focus();
    for (let i = 0; i < 40 && (await page.evaluate(() => document.activeElement?.id)) !== "f-action"; i++) await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "f-action");
    await page.keyboard.type(`${tag}.login`);
    await page.keyboard.press("Enter");
    await page.waitForURL(/action=/);
    assert.deepEqual(await actionsShown(), [`${tag}.login`, `${tag}.login`]);
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    assert.equal(await page.getByText(HOSTILE).count(), 1, "hostile text shows as text");
    await accessible("events");
    await screenshots("events");

    // Every script of the first load, compressed, stays under 150 KB.
    const scripts = await page.evaluate(() => [...document.scripts].map((s) => s.src).filter(Boolean));
    const sizes = await Promise.all(scripts.map(async (src) => gzipSync(Buffer.from(await (await fetch(src)).arrayBuffer())).length));
    assert.ok(sizes.reduce((a, b) => a + b, 0) < 150_000, `scripts: ${sizes}`);
    assert.ok(scripts.every((s) => s.startsWith(`${WITNESS}/console/assets/`)), "every script from the worker");

    for (let i = 0; i < 40 && !(await page.evaluate(() => document.activeElement?.matches("a.action"))); i++) await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await page.waitForURL(new RegExp(`/console/events/${stored[2].id}$`));
    assert.deepEqual(await page.evaluate(() => window.__violations), []);
  });

  it("opens an event and checks its receipt and inclusion proof in this browser; a wrong proof turns red", async () => {
    await page.goto(`${WITNESS}/console/events/${stored[0].id}`);
    await page.locator("#proof[data-state]").waitFor();
    assert.equal(await page.locator("#proof").getAttribute("data-state"), "ok");
    assert.match(await page.locator("#proof-verdict").textContent(), /^Checked in this browser: this event is in the project's log \(leaf \d+ of \d+\) and unaltered\.$/);
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    await accessible("event");
    await screenshots("event");

    // A receipt whose hash was altered on the way (as a tampered row would give): the browser's own check fails.
    await page.route("**/console/api/v1/events/*/receipt", async (route) => {
      const res = await route.fetch();
      const body = await res.json();
      body.data.hash = body.data.hash.replace(/^./, (c) => (c === "0" ? "1" : "0"));
      await route.fulfill({ response: res, json: body });
    });
    await page.goto(`${WITNESS}/console/events/${stored[1].id}`);
    await page.locator("#proof[data-state]").waitFor();
    assert.equal(await page.locator("#proof").getAttribute("data-state"), "bad");
    assert.match(await page.locator("#proof-verdict").textContent(), /^Check failed in this browser: /);
    assert.equal(await page.locator("#proof").evaluate((el) => getComputedStyle(el).borderColor), "rgb(192, 57, 43)");
    await screenshots("event-tampered");
    await page.unroute("**/console/api/v1/events/*/receipt");
  });

  it("runs a verify with a progress bar to its end, and every other page passes axe", async () => {
    await page.goto(`${WITNESS}/console/integrity`);
    assert.match(await page.locator("#monitor-command").textContent(), /^npm run log:monitor -- http:\/\/127\.0\.0\.1:\d+\/logs\/\S+ --vkey \S+$/);
    await page.getByRole("button", { name: "Run verify" }).click();
    await page.waitForURL(/\/console\/integrity\?job=/);
    await page.locator(".job-watch[data-status]").waitFor({ timeout: 30_000 });
    assert.equal(await page.locator(".job-watch").getAttribute("data-status"), "succeeded");
    const bar = await page.locator(".job-watch progress").evaluate((p) => [p.value, p.max]);
    assert.equal(bar[0], bar[1]);
    assert.match(await page.locator(".job-watch [role=status]").textContent(), /^Intact: \d+ events checked\.$/);
    await accessible("integrity");
    await screenshots("integrity");
    await page.goto(`${WITNESS}/console/exports`);
    await page.getByLabel("Organization").fill("acme");
    await page.getByRole("button", { name: "Start export" }).click();
    await page.waitForURL(/\/console\/exports\?job=/);
    await page.locator(".job-watch[data-status]").waitFor({ timeout: 30_000 });
    assert.equal(await page.locator(".job-watch").getAttribute("data-status"), "succeeded");
    const link = page.locator(".job-watch a[download]").first();
    const csv = await page.evaluate(async (href) => (await fetch(href)).text(), await link.getAttribute("href"));
    assert.match(csv, new RegExp(`${tag}\\.paid`));
    assert.doesNotMatch(csv, new RegExp(`${tag}\\.login`));
    for (const name of ["exports", "streams", "retention", "keys"]) {
      await page.goto(`${WITNESS}/console/${name}`);
      await page.locator("h1").waitFor();
      await accessible(name);
      await screenshots(name);
    }
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(/\/console\/sign-in\?ended=signed_out$/);
    assert.equal(await page.getByText("You are signed out.").count(), 1);
    await page.goto(`${WITNESS}/console/events`);
    assert.match(page.url(), /\/console\/sign-in$/);
    assert.deepEqual(await page.evaluate(() => window.__violations), []);
  });
});
