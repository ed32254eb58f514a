// The public pages in Debian's Chromium: landing, log page, receipt check (in the
// browser) and the server's receipt page, and the embed feed's detail panel.
// Each page gets an axe-core check and screenshots at 1280 and 390 px in
// test/browser/artifacts/ (git-ignored).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { stalePublicAssets } from "../../src/scripts/public-assets.mjs";
import { dbSql, quote, shardDatabases } from "../../src/scripts/lib.mjs";
import { tamperProject } from "./console-tamper.mjs";
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
const AMBER = "rgb(255, 243, 214)";

/** The receipt page's checks, server's and browser's, once the browser's have settled. */
async function receiptPageChecks(page) {
  await page.waitForFunction(() => {
    const outcome = document.getElementById("browser-check")?.dataset.outcome;
    return outcome && outcome !== "checking";
  });
  const list = (selector) =>
    page.locator(selector).evaluateAll((items) =>
      items.map((li) => ({ what: li.dataset.check, state: li.className.replace("check ", ""), result: li.querySelector(".result").textContent, bg: getComputedStyle(li).backgroundColor })),
    );
  const verdict = page.locator("#verdict");
  return {
    outcome: await page.locator("#browser-check").getAttribute("data-outcome"),
    verdict: await verdict.textContent(),
    verdictBg: await verdict.evaluate((n) => getComputedStyle(n).backgroundColor),
    server: await list("section[aria-labelledby=checks-h] li"),
    browser: await list("#browser-checks li"),
  };
}

/** A database writer's tamper: the event's stored hash replaced, behind the service's back. */
function tamperHash(eventId) {
  const changed = [...new Set(shardDatabases().values())].flatMap((name) =>
    dbSql(name, `UPDATE events SET hash = ${quote("ab".repeat(32))} WHERE id = ${quote(eventId)} RETURNING id`, { persistTo: process.env.WITNESS_STATE }),
  );
  assert.equal(changed.length, 1, `tampered rows for ${eventId}`);
}

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

  it("receipt page: the server's checks and the browser's own, every one green for an intact event, with readable and exact times", async () => {
    const [event] = await ingest([{ action: "invoice.approved", actor: { id: "u_fin", type: "user" } }]);
    const receipt = await api("GET", `/v1/events/${event.id}/receipt`);
    const { page, res, errors } = await open(receipt.view_url);
    assert.equal(res.status(), 200);
    const checks = await receiptPageChecks(page);
    assert.deepEqual(checks.server.map((c) => [c.state, c.bg]), Array(4).fill(["pass", GREEN]));
    assert.equal(checks.outcome, "verified");
    assert.deepEqual(checks.browser.map((c) => [c.what, c.state, c.result, c.bg]), [
      ["Receipt signature", "pass", "Signature matches", GREEN],
      ["Checkpoint signature", "pass", "The log's checkpoint is signed with a published key", GREEN],
      ["Inclusion proof", "pass", "The event's hash is in the project's transparency log", GREEN],
      ["This page", "pass", "Shows what the receipt signs", GREEN],
    ]);
    assert.match(await page.locator("#browser-checks").innerText(), new RegExp(`Leaf ${receipt.seq - 1} of a tree of \\d+\\.`));
    assert.equal(
      checks.verdict,
      "Verified by the server: this event is in its project's audit chain and has not been altered. " +
        "Verified in your browser: the receipt is signed with a published key, and the event's hash is in the project's transparency log.",
    );
    assert.equal(checks.verdictBg, GREEN);
    assert.match(await page.locator("main").innerText(), /Checked by 127\.0\.0\.1:\d+ on \d{1,2} \w+ \d{4} at/);
    assert.ok(await page.getByText(event.occurred_at, { exact: true }).count());
    await expectAccessible(page, "receipt page");
    await screenshots(page, "receipt-page");
    // The receipt it checked is there to keep, and is the one the API signs.
    await page.getByText("The signed receipt (JSON)").click();
    const carried = JSON.parse(await page.locator("#signed-receipt").textContent());
    assert.equal(carried.event_id, event.id);
    assert.equal(carried.hash, receipt.hash);
    assert.deepEqual(await page.evaluate(() => window.__violations), []);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it("receipt page: a receipt edited on its way to the reader fails in the browser, whatever the server said", async () => {
    const [event] = await ingest([{ action: "payout.approved" }]);
    const page = await browser.context.newPage();
    // A man in the middle (or a lying server) changes the signed receipt the page carries.
    await page.route(`${WITNESS}/receipts/${event.id}`, async (route) => {
      const res = await route.fetch();
      const html = (await res.text()).replace(/(<pre id="signed-receipt">[^<]*?&quot;action&quot;: &quot;)payout\.approved/, "$1payout.rejected");
      assert.match(html, /payout\.rejected/);
      await route.fulfill({ response: res, body: html });
    });
    await page.goto(`${WITNESS}/receipts/${event.id}`);
    const checks = await receiptPageChecks(page);
    assert.equal(checks.outcome, "failed");
    assert.deepEqual(checks.server.map((c) => c.state), ["pass", "pass", "pass", "pass"]);
    assert.deepEqual(checks.browser.map((c) => [c.what, c.state, c.result]), [
      ["Receipt signature", "fail", "Signature does not match"],
      ["Checkpoint signature", "skip", "Not checked: the receipt's signature did not verify"],
      ["Inclusion proof", "skip", "Not checked: the receipt's signature did not verify"],
      ["This page", "skip", "Not checked: the receipt's signature did not verify"],
    ]);
    assert.equal(checks.browser[0].bg, RED);
    assert.equal(checks.verdict, "Not verified: your browser's check of this receipt failed (below). The server says the event is intact, but that is its word alone.");
    assert.equal(checks.verdictBg, RED);
    await expectAccessible(page, "receipt page (receipt edited)");
    await screenshots(page, "receipt-page-edited");
    await page.close();
  });

  it("receipt page: a hash changed in the database is not the one in the log, and the browser says so", async () => {
    const key = tamperProject();
    const [, victim] = await ingest([{ action: "ledger.opened" }, { action: "ledger.debited" }, { action: "ledger.closed" }], key);
    tamperHash(victim.id);
    const { page, errors } = await open(`${WITNESS}/receipts/${victim.id}`);
    const checks = await receiptPageChecks(page);
    assert.equal(checks.outcome, "failed");
    assert.equal(checks.server[0].state, "fail");
    assert.deepEqual(checks.browser.map((c) => [c.what, c.state, c.result]), [
      ["Receipt signature", "pass", "Signature matches"],
      ["Checkpoint signature", "pass", "The log's checkpoint is signed with a published key"],
      ["Inclusion proof", "fail", "The event's hash is not in the log's signed tree"],
      ["This page", "pass", "Shows what the receipt signs"],
    ]);
    assert.equal(checks.browser[2].bg, RED);
    assert.equal(checks.verdict, "Not verified: the server found this event or its place in the chain altered. Your browser's check failed too (below).");
    // The console's tamper test reads the page's one verdict this way.
    assert.equal(await page.locator(".verdict").count(), 1);
    await expectAccessible(page, "receipt page (hash changed)");
    await screenshots(page, "receipt-page-hash-changed");
    assert.deepEqual(errors, []);
    await page.close();
  });

  it("receipt page: says plainly when the browser did not check, and never claims it did", async () => {
    const [event] = await ingest([{ action: "report.filed" }]);
    // The script never arrives (blocked, offline, or JavaScript off): the server's word, said to be only that.
    const blocked = await browser.context.newPage();
    await blocked.route(`${WITNESS}/assets/public/check.js`, (route) => route.abort());
    await blocked.goto(`${WITNESS}/receipts/${event.id}`);
    assert.equal(
      await blocked.locator("#verdict").textContent(),
      "Verified by the server: this event is in its project's audit chain and has not been altered. Your browser has not checked this receipt.",
    );
    assert.deepEqual(await blocked.locator("#browser-checks .result").allTextContents(), Array(4).fill("Not checked: this needs JavaScript"));
    assert.equal(await blocked.locator("#browser-check").getAttribute("data-outcome"), null);
    await expectAccessible(blocked, "receipt page (no script)");
    await blocked.close();

    // The published keys cannot be fetched: nothing is checked, and the verdict turns amber saying why.
    const page = await browser.context.newPage();
    await page.route(`${WITNESS}/.well-known/witness-keys.json`, (route) => route.fulfill({ status: 503, body: "down" }));
    await page.goto(`${WITNESS}/receipts/${event.id}`);
    const checks = await receiptPageChecks(page);
    assert.equal(checks.outcome, "unavailable");
    assert.deepEqual(checks.browser.map((c) => [c.state, c.result]), Array(4).fill(["skip", "Not checked"]));
    assert.equal(
      checks.verdict,
      "Verified by the server: this event is in its project's audit chain and has not been altered. " +
        "Not checked in your browser: the published keys could not be loaded (HTTP 503).",
    );
    assert.equal(checks.verdictBg, AMBER);
    await expectAccessible(page, "receipt page (keys unavailable)");
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
