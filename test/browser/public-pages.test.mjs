// The public pages in Debian's Chromium: landing, log page, receipt check (in the
// browser) and the server's receipt page, and the embed feed's detail panel.
// Each page gets an axe-core check and screenshots at 1280 and 390 px in
// test/browser/artifacts/ (git-ignored).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { stalePublicAssets } from "../../src/scripts/public-assets.mjs";
import { API_KEY, api, embedToken, expectAccessible, feedPage, feedState, ingest, launchBrowser, screenshots, startHost, unique, WITNESS } from "./support.mjs";


let browser;
let host;

before(async () => {
  browser = await launchBrowser();
  host = await startHost();
});

after(async () => {
  await browser?.close();
  await host?.close();
});

async function open(url) {
  const page = await browser.context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  const res = await page.goto(url);
  return { page, errors, res };
}

async function checkBox(page) {
  return page.locator("#checks li").evaluateAll((items) =>
    items.map((li) => ({ what: li.dataset.check, state: li.className.replace("check ", ""), result: li.querySelector(".result").textContent, bg: getComputedStyle(li).backgroundColor })),
  );
}

const GREEN = "rgb(220, 243, 227)";
const RED = "rgb(255, 229, 232)";

describe("public pages", () => {
  it("ships the check script built from the current sources", async () => {
    assert.equal(await stalePublicAssets(), null);
  });

  it("landing page: what Witness is, and its links work", async () => {
    const { page, errors, res } = await open(`${WITNESS}/`);
    assert.equal(res.status(), 200);
    assert.match(await page.locator("h1").textContent(), /audit log/);
    for (const href of ["/console", "/docs", "/receipts"]) {
      assert.ok(await page.locator(`main a[href="${href}"]`).count(), `a link to ${href}`);
      const status = (await fetch(`${WITNESS}${href}`, { headers: { Accept: "text/html" }, redirect: "manual" })).status;
      assert.ok(status < 400, `${href} answers ${status}`);
    }
    await expectAccessible(page, "landing");
    await screenshots(page, "landing");
    await page.locator('main a[href="/receipts"]').click();
    await page.waitForURL(`${WITNESS}/receipts`);
    assert.equal(await page.locator("h1").textContent(), "Check a receipt");
    assert.deepEqual(await page.evaluate(() => window.__violations), []);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it("log page: size, checkpoint and the monitor command", async () => {
    await ingest([{ action: "log.page.a" }, { action: "log.page.b" }]);
    const log = await api("GET", "/v1/log");
    const { page, res } = await open(log.public_url);
    assert.equal(res.status(), 200);
    assert.equal(await page.locator("#log-size").textContent(), String(log.tree_size));
    assert.equal(await page.locator("#checkpoint").textContent(), log.checkpoint);
    assert.equal(await page.locator("#monitor-command").textContent(), `npm run log:monitor -- ${log.public_url} --vkey ${log.vkey}`);
    await expectAccessible(page, "log page");
    await screenshots(page, "log");
    await page.close();
  });

  it("receipt check: green for a real receipt, red 'Signature does not match' once edited", async () => {
    const [event] = await ingest([{ action: "contract.signed", actor: { id: "u_signer", type: "user" }, targets: [{ type: "contract", id: "c_1" }] }]);
    const receipt = await api("GET", `/v1/events/${event.id}/receipt`);
    const { page, errors } = await open(`${WITNESS}/receipts`);
    await page.getByLabel("Receipt JSON").fill(JSON.stringify(receipt, null, 2));
    await page.getByRole("button", { name: "Check" }).click();
    await page.locator("#result").waitFor();
    assert.match(await page.locator("#verdict").textContent(), /^Verified in this browser/);
    const good = await checkBox(page);
    assert.deepEqual(good.map((c) => [c.what, c.state]), [["Format", "pass"], ["Signature", "pass"], ["Transparency log", "pass"], ["At issuance", "pass"]]);
    assert.ok(good.every((c) => c.bg === GREEN), JSON.stringify(good));
    assert.equal(await page.locator("#result").evaluate((n) => n === document.activeElement), true);
    await expectAccessible(page, "receipt check (verified)");
    await screenshots(page, "receipt-check-ok");

    await page.getByLabel("Receipt JSON").fill(JSON.stringify({ ...receipt, action: "contract.cancelled" }));
    await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await page.locator("#verdict", { hasText: "Not verified" }).waitFor();
    const bad = await checkBox(page);
    assert.deepEqual(bad.map((c) => [c.what, c.state, c.result]), [
      ["Format", "pass", "A witness.receipt.v1 receipt"],
      ["Signature", "fail", "Signature does not match"],
      ["Transparency log", "skip", "Not checked: an earlier check failed"],
      ["At issuance", "skip", "Not checked: an earlier check failed"],
    ]);
    assert.equal(bad[1].bg, RED);
    await expectAccessible(page, "receipt check (tampered)");
    await screenshots(page, "receipt-check-tampered");

    // A receipt link opens the server's check of its event.
    await page.getByLabel("Receipt JSON").fill(receipt.view_url);
    await page.getByRole("button", { name: "Check" }).click();
    await page.waitForURL(receipt.view_url);
    assert.deepEqual(await page.evaluate(() => window.__violations), []);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it("receipt page: every check green for an intact event, with readable and exact times", async () => {
    const [event] = await ingest([{ action: "invoice.approved", actor: { id: "u_fin", type: "user" } }]);
    const receipt = await api("GET", `/v1/events/${event.id}/receipt`);
    const { page, res } = await open(receipt.view_url);
    assert.equal(res.status(), 200);
    const checks = await page.locator("ul.checks li").evaluateAll((items) => items.map((li) => [li.className, getComputedStyle(li).backgroundColor]));
    assert.deepEqual(checks, Array(4).fill(["check pass", GREEN]));
    assert.match(await page.locator("main").innerText(), /Checked by 127\.0\.0\.1:\d+ on \d{1,2} \w+ \d{4} at/);
    assert.ok(await page.getByText(event.occurred_at, { exact: true }).count());
    await expectAccessible(page, "receipt page");
    await screenshots(page, "receipt-page");
    await page.close();
  });
});

describe("<witness-feed> detail panel", () => {
  it("opens from the keyboard with the event's receipt link, and Escape closes it", async () => {
    const org = unique("org");
    const [stored] = await ingest([{ action: "panel.opened", organization: org, actor: { id: "u_p", name: "Pat" }, targets: [{ type: "doc", id: "d_1", name: "Plan" }] }]);
    const { page, errors } = await open(host.page(feedPage({ token: await embedToken({ organization: org }) })));
    assert.equal(await feedState(page), "ready");
    const row = page.getByRole("button", { name: /panel\.opened/ });
    assert.equal(await row.getAttribute("aria-expanded"), "false");
    // Tab: the search box, its button, then the first row.
    for (let i = 0; i < 3; i++) await page.keyboard.press("Tab");
    assert.equal(await row.evaluate((n) => n.getRootNode().activeElement === n), true);
    await page.keyboard.press("Enter");
    assert.equal(await row.getAttribute("aria-expanded"), "true");
    const panel = page.getByRole("region", { name: "Event details" });
    assert.match(await panel.innerText(), /Pat · u_p/);
    assert.match(await panel.innerText(), new RegExp(stored.id));
    const link = panel.getByRole("link", { name: "View receipt" });
    assert.equal(await link.getAttribute("href"), `${WITNESS}/receipts/${stored.id}`);
    assert.equal((await fetch(`${WITNESS}/receipts/${stored.id}`)).status, 200);
    await expectAccessible(page, "feed with an open panel");
    await screenshots(page, "feed-panel");
    await page.keyboard.press("Tab");
    assert.equal(await link.evaluate((n) => n.getRootNode().activeElement === n), true);
    await page.keyboard.press("Escape");
    assert.equal(await panel.isVisible(), false);
    assert.equal(await row.getAttribute("aria-expanded"), "false");
    assert.equal(await row.evaluate((n) => n.getRootNode().activeElement === n), true);
    await page.keyboard.press("Space");
    assert.equal(await panel.isVisible(), true);
    assert.deepEqual(errors, []);
    await page.close();
  });
});
