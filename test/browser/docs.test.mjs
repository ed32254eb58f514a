import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { launchBrowser, WITNESS } from "./support.mjs";

let browser;

before(async () => {
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
});

describe("GET /docs, the API reference", () => {
  it("renders the operations from /openapi.json with assets from the worker only and no CSP violation", async () => {
    const page = await browser.context.newPage();
    const requests = [];
    const errors = [];
    page.on("request", (r) => requests.push(r.url()));
    page.on("pageerror", (e) => errors.push(e.message));
    const res = await page.goto(`${WITNESS}/docs`);
    assert.equal(res.status(), 200);
    assert.match(res.headers()["content-security-policy"], /script-src 'self';/);

    // Operations by their summaries, from the document: the reference is rendered, not just loaded.
    for (const summary of ["Record one event", "List events, newest first", "Full-text search over events", "Actors", "Transparency log"]) {
      await page.getByText(summary, { exact: true }).first().waitFor({ state: "attached", timeout: 30_000 });
    }
    await page.getByText("ErrorResponse").first().waitFor({ state: "attached", timeout: 10_000 });
    await new Promise((r) => setTimeout(r, 1000)); // anything late (fonts, telemetry) would show now

    const origin = new URL(WITNESS).origin;
    const external = requests.filter((url) => !url.startsWith(origin) && !url.startsWith("data:") && !url.startsWith("blob:"));
    assert.deepEqual(external, [], "the reference page must load nothing from another origin");
    assert.ok(requests.includes(`${origin}/docs/scalar.js`), "the script comes from the worker's static assets");
    assert.ok(requests.includes(`${origin}/openapi.json`));
    assert.deepEqual(await page.evaluate(() => window.__violations), []);
    assert.deepEqual(errors, []);
    await page.close();
  });
});
