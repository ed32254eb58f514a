import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createKey } from "../../src/scripts/lib.mjs";
import {
  actions, API_KEY, api, DEMO_API_KEY, embedToken, expectAccessible, expiredToken, feedPage, expectActions, feedState, ingest, launchBrowser,
  screenshots, sha256Base64, startHost, unique, WITNESS,
} from "./support.mjs";

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
  await page.goto(url);
  return { page, errors };
}

describe("<witness-feed> on a customer's page", () => {
  it("shows its organization's events only, newest first, and load more appends the next page", async () => {
    const org = unique("org");
    await ingest(Array.from({ length: 7 }, (_, i) => ({ action: `report.viewed.${i + 1}`, organization: org, actor: { id: `u${i}`, name: `Reader ${i + 1}` }, targets: [{ type: "report", id: `r${i}`, name: `Report ${i + 1}` }] })));
    // Newer than all of the above: they would come first if the token leaked them.
    await ingest([{ action: "other.tenant.secret", organization: unique("other") }, { action: "system.without.org" }].map((e) => ({ ...e, occurred_at: new Date().toISOString() })));

    const { page, errors } = await open(host.page(feedPage({ token: await embedToken({ organization: org }), pageSize: 5 })));
    assert.equal(await feedState(page), "ready");
    assert.deepEqual(await actions(page), ["report.viewed.7", "report.viewed.6", "report.viewed.5", "report.viewed.4", "report.viewed.3"]);
    const first = page.locator("witness-feed li").first();
    assert.equal(await first.locator(".detail").textContent(), "Reader 7 \u00b7 report: Report 7");
    const time = first.locator("time");
    assert.match(await time.textContent(), /ago/);
    assert.match(await time.getAttribute("title"), /\(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z\)$/);

    await page.getByRole("button", { name: "Load more" }).click();
    await expectActions(page, [7, 6, 5, 4, 3, 2, 1].map((n) => `report.viewed.${n}`));
    assert.equal(await feedState(page), "ready");
    assert.match(await page.locator("witness-feed [role=status]").textContent(), /2 more events loaded/);
    if (await page.getByRole("button", { name: "Load more" }).isVisible()) {
      await page.getByRole("button", { name: "Load more" }).click();
      assert.equal(await feedState(page), "ready");
      assert.equal((await actions(page)).length, 7);
    }
    assert.equal(await page.getByRole("button", { name: "Load more" }).isVisible(), false);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it("searches from the keyboard, narrows to matches of its organization, and clears back to the list", async () => {
    const org = unique("org");
    await ingest([
      { action: "invoice.paid", organization: org, actor: { id: "u_ann", name: "Ann Example" } },
      { action: "user.login", organization: org, actor: { id: "u_bo", name: "Bo" } },
      { action: "invoice.refunded", organization: org, actor: { id: "u_bo", name: "Bo" } },
      { action: "user.logout", organization: org, actor: { id: "u_ann", name: "Ann Example" } },
      { action: "invoice.paid", organization: unique("other"), actor: { id: "u_x", name: "Ann Elsewhere" } },
    ]);
    const { page } = await open(host.page(feedPage({ token: await embedToken({ organization: org }), pageSize: 10 })));
    assert.equal(await feedState(page), "ready");
    assert.equal((await actions(page)).length, 4);

    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.querySelector("witness-feed").shadowRoot.activeElement?.getAttribute("aria-label")), "Search events");
    await page.keyboard.type("invoice");
    await page.keyboard.press("Enter");
    await expectActions(page, ["invoice.refunded", "invoice.paid"]);

    await page.getByRole("searchbox").fill("ann");
    await page.getByRole("button", { name: "Search" }).press("Enter");
    await expectActions(page, ["user.logout", "invoice.paid"]);

    await page.getByRole("searchbox").fill("nothingmatchesthis");
    await page.keyboard.press("Enter");
    assert.equal(await feedState(page), "empty");
    assert.equal(await page.locator("witness-feed [role=status]").textContent(), "No events match your search.");

    await page.getByRole("searchbox").fill("");
    await expectActions(page, ["user.logout", "invoice.refunded", "user.login", "invoice.paid"]);
    await page.close();
  });

  it("renders hostile values as text and runs none of them", async () => {
    const org = unique("org");
    const action = '<img src=x onerror="window.__xss=(window.__xss||0)+1">';
    const name = "<script>window.__xss=(window.__xss||0)+1</script>";
    await ingest([{ action, organization: org, actor: { id: "u1", name }, targets: [{ type: "doc", id: "d1", name: '<b onmouseover="window.__xss=1">bold</b>' }] }]);
    const { page } = await open(host.page(feedPage({ token: await embedToken({ organization: org }) })));
    assert.equal(await feedState(page), "ready");
    assert.deepEqual(await actions(page), [action]);
    assert.equal(await page.locator("witness-feed li .detail").textContent(), `${name} \u00b7 doc: <b onmouseover="window.__xss=1">bold</b>`);
    const planted = await page.evaluate(() => document.querySelector("witness-feed").shadowRoot.querySelectorAll("img, script, b").length);
    assert.equal(planted, 0);
    await page.locator("witness-feed li .detail").hover();
    await page.waitForTimeout(300);
    assert.equal(await page.evaluate(() => window.__xss), undefined);
    await page.close();
  });

  it("headlines an event with its catalog sentence, keeps the action in view, and lists its changes as text", async () => {
    const org = unique("org");
    const action = unique("user.role_changed");
    await api("PUT", `/v1/schemas/${encodeURIComponent(action)}`, {
      display: "{actor.name|actor.id} changed {targets.user.name}'s role from {changes.role.before} to {changes.role.after}",
    });
    const img = '<img src=x onerror="window.__xss=(window.__xss||0)+1">';
    const script = "<script>window.__xss=(window.__xss||0)+1</script>";
    const long = "\u{1F600}".repeat(100);
    await ingest([
      {
        action, organization: org, actor: { id: "u_ada", name: "Ada" }, targets: [{ type: "user", id: "u_bob", name: "Bob" }],
        changes: [{ field: "role", before: "viewer", after: "admin" }, { field: "mfa", after: true }, { field: "nickname", before: "Bobby" }, { field: "bio", before: null, after: long }],
      },
      {
        action, organization: org, actor: { id: "u_eve", name: img }, targets: [{ type: "user", id: "u_mal", name: script }],
        changes: [{ field: "role", before: script, after: img }, { field: img, after: { html: script } }],
      },
      { action: "no.template.here", organization: org, actor: { id: "u_cy", name: "Cy" } },
    ]);
    const { page, errors } = await open(host.page(feedPage({ token: await embedToken({ organization: org, include_metadata: true }) })));
    assert.equal(await feedState(page), "ready");
    const rows = page.locator("witness-feed li");
    const headlines = () => page.locator("witness-feed li .head > span").allTextContents();
    assert.deepEqual(await headlines(), ["no.template.here", `${img} changed ${script}'s role from ${script} to ${img}`, "Ada changed Bob's role from viewer to admin"]);
    assert.deepEqual(await actions(page), ["no.template.here", action, action]);
    assert.equal(await rows.nth(2).locator(".detail").textContent(), `${action} \u00b7 Ada \u00b7 user: Bob`);
    assert.equal(await rows.nth(0).locator(".detail").textContent(), "Cy");

    const cells = (table) => table.evaluate((t) => [...t.tBodies[0].rows].map((r) => [...r.cells].map((c) => c.textContent)));
    await rows.nth(2).locator("button.row").click();
    const table = page.getByRole("table", { name: "Changes" });
    assert.deepEqual(await table.locator("thead th").allTextContents(), ["Field", "Before", "After"]);
    assert.equal(await table.getByRole("rowheader").count(), 4);
    const bio = `"${"\u{1F600}".repeat(78)}\u2026`;
    assert.deepEqual(await cells(table), [["role", '"viewer"', '"admin"'], ["mfa", "(none)", "true"], ["nickname", '"Bobby"', "(removed)"], ["bio", "null", bio]]);
    await expectAccessible(page, "feed with an open changes table");
    await screenshots(page, "feed-changes");
    await rows.nth(2).locator("button.row").click();

    await rows.nth(1).locator("button.row").click();
    assert.deepEqual(await cells(page.getByRole("table", { name: "Changes" })), [["role", JSON.stringify(script), JSON.stringify(img)], [img, "(none)", JSON.stringify({ html: script })]]);
    await rows.nth(0).locator("button.row").click();
    assert.equal(await rows.nth(0).locator("table").count(), 0);
    const planted = await page.evaluate(() => document.querySelector("witness-feed").shadowRoot.querySelectorAll("img, script").length);
    assert.equal(planted, 0);
    await page.waitForTimeout(300);
    assert.equal(await page.evaluate(() => window.__xss), undefined);
    assert.deepEqual(errors, []);
    await page.close();

    // A token without include_metadata gets no changes, so the feed has none to list.
    const { page: reduced } = await open(host.page(feedPage({ token: await embedToken({ organization: org }) })));
    assert.equal(await feedState(reduced), "ready");
    await reduced.locator("witness-feed li button.row").nth(2).click();
    assert.equal(await reduced.locator("witness-feed table").count(), 0);
    await reduced.close();
  });

  it("tells an expired token from one that is not valid, and tells the host page only of expiry", async () => {
    const org = unique("org");
    await ingest([{ action: "visible.only.with.a.valid.token", organization: org }]);
    const listen = `<script>document.addEventListener("witness-feed-expired", () => { document.body.dataset.expired = "yes"; });</script>`;
    const valid = await embedToken({ organization: org });
    const tampered = valid.slice(0, -3) + (valid.endsWith("AAA") ? "BBB" : "AAA");
    const cases = [
      [expiredToken(org), "expired", "Access to this feed has expired. Reload the page to see it again.", "yes"],
      [tampered, "invalid", "This feed's token is not valid, or the key that minted it was revoked or cannot read events.", undefined],
    ];
    for (const [token, state, text, told] of cases) {
      const { page, errors } = await open(host.page(feedPage({ token, extraHead: listen })));
      assert.equal(await feedState(page), state);
      assert.equal(await page.locator("witness-feed [role=status]").textContent(), text);
      assert.equal(await page.getByRole("button", { name: "Try again" }).isVisible(), false);
      assert.deepEqual(await actions(page), []);
      assert.equal(await page.evaluate(() => document.body.dataset.expired), told, state);
      await expectAccessible(page, `feed (${state})`);
      await screenshots(page, `feed-${state}`);
      assert.deepEqual(errors, []);
      await page.close();
    }
  });

  it("shows a refusal, an unreachable service and the server's own reason each in its own words", async () => {
    const org = unique("org");
    await ingest([{ action: "seen.once.answered", organization: org }]);
    const listen = `<script>document.addEventListener("witness-feed-expired", () => { document.body.dataset.expired = "yes"; });</script>`;
    const answer = (status, code, details = {}) => (route) =>
      route.fulfill({
        status,
        contentType: "application/json",
        headers: { "Access-Control-Allow-Origin": "*" },
        body: JSON.stringify({ error: { code, message: `${code} from the test`, details } }),
      });
    const cases = [
      [await embedToken({ organization: org }), answer(403, "FORBIDDEN"), "forbidden", "This token may not read these events.", undefined],
      [await embedToken({ organization: org }), answer(503, "UNAVAILABLE"), "unreachable", "The audit log could not be reached. Try again in a moment.", undefined],
      // When the server names the reason, it wins over the token's own clock.
      [await embedToken({ organization: org }), answer(401, "UNAUTHORIZED", { reason: "expired" }), "expired", "Access to this feed has expired. Reload the page to see it again.", "yes"],
      [expiredToken(org), answer(401, "UNAUTHORIZED", { reason: "key_revoked" }), "invalid", "This feed's token is not valid, or the key that minted it was revoked or cannot read events.", undefined],
    ];
    for (const [token, handler, state, text, told] of cases) {
      const page = await browser.context.newPage();
      await page.route(`${WITNESS}/v1/**`, handler);
      await page.goto(host.page(feedPage({ token, extraHead: listen })));
      assert.equal(await feedState(page), state);
      assert.equal(await page.locator("witness-feed [role=status]").textContent(), text);
      assert.equal(await page.getByRole("button", { name: "Try again" }).isVisible(), state === "unreachable", state);
      assert.equal(await page.evaluate(() => document.body.dataset.expired), told, state);
      if (state === "unreachable") {
        await page.unroute(`${WITNESS}/v1/**`);
        await page.getByRole("button", { name: "Try again" }).click();
        await expectActions(page, ["seen.once.answered"]);
      }
      await page.close();
    }
  });

  it("picks up a new token set by the host page after expiry", async () => {
    const org = unique("org");
    await ingest([{ action: "seen.after.refresh", organization: org }]);
    const { page } = await open(host.page(feedPage({ token: expiredToken(org) })));
    assert.equal(await feedState(page), "expired");
    const fresh = await embedToken({ organization: org });
    await page.evaluate((t) => document.querySelector("witness-feed").setAttribute("token", t), fresh);
    await expectActions(page, ["seen.after.refresh"]);
    await page.close();
  });

  it("works under a strict Content-Security-Policy and takes the host's theme", async () => {
    const org = unique("org");
    await ingest([{ action: "themed.event", organization: org }]);
    const style = "witness-feed { --witness-accent: rgb(1, 2, 3); --witness-font: Georgia, serif; }";
    const csp = `default-src 'none'; script-src ${WITNESS}; connect-src ${WITNESS}; style-src 'sha256-${sha256Base64(style)}'`;
    const { page, errors } = await open(
      host.page(feedPage({ token: await embedToken({ organization: org }), style }), { "Content-Security-Policy": csp }),
    );
    assert.equal(await feedState(page), "ready");
    assert.deepEqual(await actions(page), ["themed.event"]);
    const look = await page.evaluate(() => {
      const root = document.querySelector("witness-feed").shadowRoot;
      const button = getComputedStyle(root.querySelector("button[type=submit]"));
      return { accent: button.backgroundColor, font: getComputedStyle(root.querySelector("section")).fontFamily };
    });
    assert.deepEqual(look, { accent: "rgb(1, 2, 3)", font: "Georgia, serif" });
    assert.deepEqual(await page.evaluate(() => window.__violations), []);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it("says the service cannot be reached, with a retry, when the request fails", async () => {
    const page = await browser.context.newPage();
    await page.route(`${WITNESS}/v1/**`, (route) => route.abort());
    await page.goto(host.page(feedPage({ token: await embedToken() })));
    assert.equal(await feedState(page), "unreachable");
    assert.equal(await page.locator("witness-feed [role=status]").textContent(), "The audit log could not be reached. Try again in a moment.");
    await page.unroute(`${WITNESS}/v1/**`);
    await page.getByRole("button", { name: "Try again" }).click();
    assert.equal(await feedState(page), "ready");
    await page.close();
  });
});

describe("the dev demo page", () => {
  it("shows the demo project's feed with a token it minted, under its own CSP, even once its newest key is ingest-only", async () => {
    await ingest([{ action: "demo.page.opened", organization: "acme", actor: { id: "u_demo", name: "Demo User" } }], DEMO_API_KEY);
    // The README's first step: a key for the app's servers, which can only add events.
    createKey("browser-demo", { persistTo: process.env.WITNESS_STATE }, { scopes: ["ingest"], label: "app servers" });
    const { page, errors } = await open(`${WITNESS.replace("127.0.0.1", "localhost")}/embed/demo`);
    assert.equal(await feedState(page), "ready");
    assert.deepEqual(await actions(page), ["demo.page.opened"]);
    assert.match(await page.locator("main > p").textContent(), /minted from the key \w+ \(admin\), the project's newest that can read/);
    assert.deepEqual(await page.evaluate(() => window.__violations), []);
    assert.deepEqual(errors, []);
    await page.close();
  });
});

describe("a receipt's public view page", () => {
  it("opens from view_url without a key and shows no personal data", async () => {
    const [event] = await ingest([{ action: "contract.signed", actor: { id: "u_sig", type: "user", name: "Secret Name", email: "secret@example.com" }, metadata: { note: "private" } }]);
    const receipt = await api("GET", `/v1/events/${event.id}/receipt`, undefined, API_KEY);
    const page = await browser.context.newPage();
    const res = await page.goto(receipt.view_url);
    assert.equal(res.status(), 200);
    const text = await page.locator("body").innerText();
    assert.match(text, /contract\.signed/);
    assert.match(text, /Verified/);
    for (const secret of ["Secret Name", "secret@example.com", "private"]) assert.equal(text.includes(secret), false);
    assert.deepEqual(await page.evaluate(() => window.__violations), []);
    await page.close();
  });
});
