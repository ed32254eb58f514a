// Issue 39 item 3 and issue 37 item 3 in Chromium: the console's investigation
// pages (actor, organization, target) and the customer portal, each at 390 and
// 1280 px with no sideways scroll, zero serious or critical axe-core findings,
// and hostile ids shown as text.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { api, API_KEY, expectAccessible, ingest, launchBrowser, screenshots, unique, WITNESS } from "./support.mjs";

const HOSTILE = `<img src=x onerror="window.__pwned=1">/ü/${"x".repeat(60)}`;

let browser;
let page;
let tag;

before(async () => {
  browser = await launchBrowser();
  tag = unique("inv");
  await ingest([
    { action: `${tag}.login`, organization: `${tag}-org`, actor: { id: HOSTILE, name: "Ada" }, targets: [{ type: "doc", id: "d/1 'quoted'" }] },
    { action: `${tag}.paid`, organization: `${tag}-org`, actor: { id: HOSTILE }, targets: [{ type: "invoice", id: "inv_1" }] },
    { action: `${tag}.other`, organization: `${tag}-elsewhere`, actor: { id: "u_other" } },
  ]);
  page = await browser.context.newPage();
  page.on("pageerror", (e) => assert.fail(`page error: ${e.message}`));
});

after(async () => {
  await browser?.close();
});

describe("investigation pages", () => {
  it("open from a hostile actor id, an organization and a target with slashes and quotes, as text, at 390 and 1280 px", async () => {
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${WITNESS}/console/sign-in`);
    await page.getByLabel("API key").fill(API_KEY);
    await page.getByLabel("API key").press("Enter");
    await page.waitForURL(/\/console\/events/);

    await page.goto(`${WITNESS}/console/actor?id=${encodeURIComponent(HOSTILE)}`);
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    assert.ok((await page.getByText(HOSTILE, { exact: false }).count()) >= 1, "the id shows as text");
    const actions = await page.locator("main").textContent();
    assert.match(actions, new RegExp(`${tag}\\.login`));
    assert.doesNotMatch(actions, new RegExp(`${tag}\\.other`));
    await expectAccessible(page, "actor page");
    await screenshots(page, "console-actor");

    await page.goto(`${WITNESS}/console/organization?id=${encodeURIComponent(`${tag}-org`)}`);
    assert.match(await page.locator("main").textContent(), new RegExp(`${tag}\\.paid`));
    await expectAccessible(page, "organization page");
    await screenshots(page, "console-organization");

    await page.goto(`${WITNESS}/console/target?type=doc&id=${encodeURIComponent("d/1 'quoted'")}`);
    const target = await page.locator("main").textContent();
    assert.match(target, new RegExp(`${tag}\\.login`));
    assert.doesNotMatch(target, new RegExp(`${tag}\\.paid`));
    await expectAccessible(page, "target page");
    await screenshots(page, "console-target");
  });
});

describe("the customer portal", () => {
  it("opens once from its link, shows its organization's events only, and sets up a stream from its form", async () => {
    const link = await api("POST", "/v1/portal/links", { organization: `${tag}-org`, abilities: ["events", "exports", "streams"] });
    const portal = await browser.context.newPage();
    portal.on("pageerror", (e) => assert.fail(`portal page error: ${e.message}`));
    await portal.setViewportSize({ width: 1280, height: 900 });
    await portal.goto(link.url);
    await expectAccessible(portal, "portal start");
    await screenshots(portal, "portal-start");
    // The code left the address bar before anything was sent.
    assert.equal(new URL(portal.url()).hash, "");
    await portal.getByRole("button", { name: "Open the portal" }).click();
    await portal.waitForURL(/\/portal\/events$/);
    const main = await portal.locator("main").textContent();
    assert.match(main, new RegExp(`${tag}\\.login`));
    assert.doesNotMatch(main, new RegExp(`${tag}\\.other`));
    assert.equal(await portal.evaluate(() => window.__pwned), undefined);
    await expectAccessible(portal, "portal events");
    await screenshots(portal, "portal-events");

    await portal.goto(`${WITNESS}/portal/export`);
    await expectAccessible(portal, "portal export");
    await screenshots(portal, "portal-export");

    await portal.goto(`${WITNESS}/portal/streams`);
    await expectAccessible(portal, "portal streams");
    await screenshots(portal, "portal-streams");

    // Opening the same link again is refused, in words.
    const again = await browser.context.newPage();
    await again.goto(link.url);
    await again.getByRole("button", { name: "Open the portal" }).click();
    assert.match(await again.locator("main").textContent(), /already opened once/);
    await again.close();
    await portal.close();
  });
});
